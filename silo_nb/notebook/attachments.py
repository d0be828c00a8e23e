"""Prompt text and attachments for ``%%prompt``: ``{var}`` interpolation, ``--attach VAR``, ``--file PATH``.

- ``{name}`` / ``{name.attr}`` are filled from the user namespace, ``{In[3]}`` / ``{Out[5]}`` (a name with
  an integer index) from IPython's input and output history; unknown names or indexes are left as
  written and ``{{``/``}}`` are literal braces. Nothing is evaluated beyond names, attributes and indexes.
- A figure (or anything with a PNG repr) and an image file are ``image`` blocks for an agent that accepts
  images (``image_attachments.py``: a small preview goes with them for the transcript's thumbnail).
- An attachment is embedded (a ``resource`` block) when the agent accepts embedded context, else written
  to a file under ``<workspace>/.silo/attachments/<session>/`` and sent as a ``resource_link`` the agent
  can read. A DataFrame is sent as CSV of its first rows (with its shape noted); text as is; anything
  else as ``repr``.
- What ``--file`` may read and send: one regular file (symlinks resolved first) the kernel's user can
  read, up to :data:`MAX_FILE_BYTES`. Nothing under ``/proc``, ``/sys`` or ``/dev`` (on their file
  systems, whatever the path says), no FIFO, socket, device or folder: ``/proc/self/environ`` would hand
  the kernel's secrets to the agent. Embedded (its text sent in the prompt) when the agent accepts that
  and it is UTF-8 text up to :data:`MAX_EMBED_BYTES`; else sent as a link the agent reads itself. Any
  other readable file is allowed: the user names it on purpose.
- Attachment files are private whatever the umask: the folders are 0700 (one of ours left loose is
  tightened; another user's is refused), each file is created 0600 and renamed over the old one, in
  folders reached from ``.silo`` without following a link (``sessions.safe_files``): a planted link is
  replaced or refused, never followed. A session's folder is named like its journal
  (``storage.encode_session_id``: reversible, so ``a/b`` and ``a_b`` never share one). They live as long
  as the session: :func:`discard_attachments` removes the session's folder when it is disposed, unless
  the user put a ``.keep`` file in it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import mimetypes
import os
import re
import shutil
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from silo_nb.model import (
    AgentSessionInputError,
)
from silo_nb.notebook.image_attachments import image_block, png_of
from silo_nb.sessions import (
    UnsafeFileError,
    encode_session_id,
    replace_file,
)

__all__ = [
    "MAX_EMBED_BYTES",
    "MAX_FILE_BYTES",
    "attachment_blocks",
    "attachments_folder",
    "describe_value",
    "discard_attachments",
    "file_blocks",
    "interpolate",
]

log = logging.getLogger("silo_nb.notebook.attachments")

MAX_EMBED_BYTES = 256 * 1024
MAX_FILE_BYTES = 1024 * 1024
KEEP_MARKER = ".keep"
_PSEUDO_ROOTS = ("/proc", "/sys", "/dev")
DATAFRAME_ROWS = 50
# ``{name}``, ``{name.attr}``, ``{In[3]}`` / ``{Out[5]}`` (an integer index or key, nothing else evaluated).
_FIELD = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?:\[(-?[0-9]+)\])?\}")
_MISSING = object()


def _lookup(namespace: Mapping[str, Any], dotted: str) -> Any:
    head, *rest = dotted.split(".")
    value = namespace.get(head, _MISSING)
    for attr in rest:
        if value is _MISSING:
            break
        value = getattr(value, attr, _MISSING)
    return value


def interpolate(text: str, namespace: Mapping[str, Any]) -> str:
    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        value = _lookup(namespace, match.group(1))
        if value is not _MISSING and match.group(2) is not None:
            try:  # In is a list, Out a dict keyed by execution count: both take an int
                value = value[int(match.group(2))]
            except (LookupError, TypeError):
                value = _MISSING
        return token if value is _MISSING else str(value)

    return _FIELD.sub(replace, text)


def describe_value(name: str, value: Any) -> tuple[str, str, str]:
    """(text, mime type, file suffix) for one attached value (``--attach``, ``@Out[5]``)."""
    if isinstance(value, str):
        return value, "text/plain", ".txt"
    to_csv = getattr(value, "to_csv", None)
    shape = getattr(value, "shape", None)
    if callable(to_csv) and hasattr(value, "head"):
        csv = value.head(DATAFRAME_ROWS).to_csv()
        note = f"# {name}: shape {tuple(shape) if shape is not None else '?'}, first {DATAFRAME_ROWS} rows\n"
        return note + str(csv), "text/csv", ".csv"
    return repr(value), "text/plain", ".txt"


def attachments_folder(workspace: Path, session_id: str | None) -> Path:
    """Where a session's attachment files go (``None``: the shared folder, never cleaned)."""
    root = workspace / ".silo" / "attachments"
    if session_id is None:
        return root
    return root / encode_session_id(session_id)


def _spill(workspace: Path, folder: Path, name: str, text: str, suffix: str) -> Path:
    data = text.encode("utf-8", "backslashreplace")
    digest = hashlib.sha256(data).hexdigest()[:10]
    path = folder / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}-{digest}{suffix}"
    try:
        replace_file(path, data, root=workspace / ".silo", tighten=True)
    except UnsafeFileError as exc:
        raise AgentSessionInputError(f"--attach: {exc}") from None
    return path


def discard_attachments(workspace: Path, session_id: str) -> bool:
    """Remove a disposed session's attachment files; ``True`` if removed. Never raises.

    A ``.keep`` file in the session's folder keeps them (attachments kept on purpose).
    """
    folder = attachments_folder(workspace, session_id)
    try:
        if not folder.is_dir() or folder.is_symlink() or (folder / KEEP_MARKER).exists():
            return False
        shutil.rmtree(folder)
        return True
    except OSError as exc:
        log.warning("could not remove the attachments in %s: %s", folder, exc)
        return False


def attachment_blocks(
    names: list[str],
    namespace: Mapping[str, Any],
    *,
    embedded: bool,
    workspace: Path,
    session_id: str | None = None,
    images: bool = False,
) -> list[dict[str, Any]]:
    """``--attach`` blocks; a variable that is not embedded is written to the session's folder; a figure
    (or anything with a PNG repr) is an image, for an agent that takes ``images``."""
    blocks: list[dict[str, Any]] = []
    for name in names:
        value = _lookup(namespace, name)
        if value is _MISSING:
            raise AgentSessionInputError(f"--attach {name}: no variable named {name!r} in the notebook.")
        png = png_of(value)
        if png is not None:
            if not images:
                raise AgentSessionInputError(
                    f"--attach {name}: the agent does not accept images (its promptCapabilities) — save "
                    "the figure to a file and attach it with --file (the agent gets a link)."
                )
            blocks.append(image_block(png, "image/png", name))
            continue
        text, mime, suffix = describe_value(name, value)
        if embedded and len(text.encode("utf-8")) <= MAX_EMBED_BYTES:
            blocks.append(
                {"type": "resource", "uri": f"silo:variable/{name}", "mime_type": mime, "text": text}
            )
        else:
            path = _spill(workspace, attachments_folder(workspace, session_id), name, text, suffix)
            # Named after the variable (the file name carries a digest): the journal and "You" say "df".
            blocks.append({"type": "resource_link", "uri": path.resolve().as_uri(), "name": name})
    return blocks


def _size(size: int) -> str:
    mib = size / 1024 / 1024
    return f"{mib:.0f} MiB" if mib == int(mib) else f"{size:,} bytes"


# File systems whose "files" are kernel state (the environment, memory, devices), wherever mounted.
_PSEUDO_TYPES = frozenset(
    {"proc", "sysfs", "devtmpfs", "devpts", "debugfs", "securityfs", "cgroup", "cgroup2", "tracefs",
     "configfs", "efivarfs", "bpf", "pstore", "mqueue", "fusectl"}
)  # fmt: skip


def _pseudo_devices() -> set[int]:
    """Device numbers of ``/proc``, ``/sys``, ``/dev`` and of every pseudo file system mounted anywhere
    (a second procfs — a container's ``/host/proc`` — has a device number of its own)."""
    devices: set[int] = set()
    for root in _PSEUDO_ROOTS:
        with contextlib.suppress(OSError):
            devices.add(os.stat(root).st_dev)
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            fields, _, after = line.partition(" - ")
            if after.split(" ", 1)[0] in _PSEUDO_TYPES:
                major, minor = fields.split()[2].split(":")
                devices.add(os.makedev(int(major), int(minor)))
    return devices


def _open_regular(raw: str, workspace: Path) -> tuple[Path, int, int]:
    """(resolved path, open descriptor, size) of the file ``--file raw`` names, or a one-line error."""
    path = Path(raw).expanduser()
    if not path.is_absolute():
        path = workspace / path
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError):
        raise AgentSessionInputError(f"--file {raw}: no such file.") from None
    text = str(resolved)
    for root in _PSEUDO_ROOTS:
        if text == root or text.startswith(root + "/"):
            raise AgentSessionInputError(
                f"--file {raw}: {resolved} is under {root} — only regular files can be attached."
            )
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC  # a FIFO must not block the kernel
    try:
        fd = os.open(resolved, flags)
    except OSError as exc:
        raise AgentSessionInputError(f"--file {raw}: cannot read it ({exc.strerror or exc}).") from None
    info = os.fstat(fd)
    problem = None
    if not stat.S_ISREG(info.st_mode) or info.st_dev in _pseudo_devices():
        problem = f"{resolved} is not a regular file — only regular files can be attached."
    elif info.st_size > MAX_FILE_BYTES:
        problem = (
            f"{_size(info.st_size)}, over the {_size(MAX_FILE_BYTES)} limit for --file — "
            "attach a smaller extract (save the part you need to a file)."
        )
    if problem is not None:
        os.close(fd)
        raise AgentSessionInputError(f"--file {raw}: {problem}")
    return resolved, fd, info.st_size


def file_blocks(
    paths: list[str], *, embedded: bool, workspace: Path, images: bool = False
) -> list[dict[str, Any]]:
    """``--file`` blocks: regular files only, up to ``MAX_FILE_BYTES`` (see the module notes); an image
    file is an image block for an agent that takes ``images``."""
    blocks: list[dict[str, Any]] = []
    for raw in paths:
        path, fd, size = _open_regular(raw, workspace)
        mime = mimetypes.guess_type(path.name)[0] or ""
        if images and mime.startswith("image/"):
            with os.fdopen(fd, "rb") as stream:
                blocks.append(image_block(stream.read(MAX_FILE_BYTES), mime, path.name))
            continue
        with os.fdopen(fd, "rb") as stream:
            data = stream.read(MAX_EMBED_BYTES + 1) if embedded and size <= MAX_EMBED_BYTES else None
        uri = path.as_uri()
        link = {"type": "resource_link", "uri": uri, "name": path.name}
        if data is None or len(data) > MAX_EMBED_BYTES:
            blocks.append(link)
            continue
        try:
            blocks.append({"type": "resource", "uri": uri, "text": data.decode("utf-8")})
        except UnicodeDecodeError:
            blocks.append(link)
    return blocks
