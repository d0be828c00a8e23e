"""Prompt text and attachments for ``%%prompt``: ``{var}`` interpolation, ``--attach VAR``, ``--file PATH``.

- ``{name}`` / ``{name.attr}`` are filled from the user namespace; unknown names are left as written and
  ``{{``/``}}`` are literal braces. Nothing is evaluated beyond names and attribute access.
- An attachment is embedded (a ``resource`` block) when the agent accepts embedded context, else written
  to a file under ``<workspace>/.silo/attachments/`` and sent as a ``resource_link`` the agent can read.
- A DataFrame is sent as CSV of its first rows (with its shape noted); text as is; anything else as
  ``repr``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from silo_nb.sessions.errors import AgentSessionInputError

__all__ = ["MAX_EMBED_BYTES", "attachment_blocks", "file_blocks", "interpolate"]

MAX_EMBED_BYTES = 256 * 1024
DATAFRAME_ROWS = 50
_FIELD = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\}")
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
        return token if value is _MISSING else str(value)

    return _FIELD.sub(replace, text)


def _describe(name: str, value: Any) -> tuple[str, str, str]:
    """(text, mime type, file suffix) for one attached variable."""
    if isinstance(value, str):
        return value, "text/plain", ".txt"
    to_csv = getattr(value, "to_csv", None)
    shape = getattr(value, "shape", None)
    if callable(to_csv) and hasattr(value, "head"):
        csv = value.head(DATAFRAME_ROWS).to_csv()
        note = f"# {name}: shape {tuple(shape) if shape is not None else '?'}, first {DATAFRAME_ROWS} rows\n"
        return note + str(csv), "text/csv", ".csv"
    return repr(value), "text/plain", ".txt"


def _spill(workspace: Path, name: str, text: str, suffix: str) -> Path:
    folder = workspace / ".silo" / "attachments"
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]
    path = folder / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}-{digest}{suffix}"
    path.write_text(text, encoding="utf-8")
    return path


def attachment_blocks(
    names: list[str], namespace: Mapping[str, Any], *, embedded: bool, workspace: Path
) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for name in names:
        value = _lookup(namespace, name)
        if value is _MISSING:
            raise AgentSessionInputError(f"--attach {name}: no variable named {name!r} in the notebook.")
        text, mime, suffix = _describe(name, value)
        if embedded and len(text.encode("utf-8")) <= MAX_EMBED_BYTES:
            blocks.append(
                {"type": "resource", "uri": f"silo:variable/{name}", "mime_type": mime, "text": text}
            )
        else:
            path = _spill(workspace, name, text, suffix)
            blocks.append({"type": "resource_link", "uri": path.resolve().as_uri(), "name": path.name})
    return blocks


def file_blocks(paths: list[str], *, embedded: bool, workspace: Path) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.is_absolute():
            path = workspace / path
        if not path.is_file():
            raise AgentSessionInputError(f"--file {raw}: no such file.")
        uri = path.resolve().as_uri()
        size = path.stat().st_size
        if embedded and size <= MAX_EMBED_BYTES:
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                blocks.append({"type": "resource_link", "uri": uri, "name": path.name})
                continue
            blocks.append({"type": "resource", "uri": uri, "text": text})
        else:
            blocks.append({"type": "resource_link", "uri": uri, "name": path.name})
    return blocks
