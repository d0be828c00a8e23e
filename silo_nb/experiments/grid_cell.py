"""One grid cell: a fresh session in its own working copy, its prompts, its journal — run anywhere.

- :func:`run_cell` is the whole life of a cell on the current event loop: a temporary working copy
  (seeded from the template folder when there is one), a private ``AgentsService`` whose journals go to a
  temporary data folder, connect, the cell's config options, the policy, the prompts one after the
  other, then the session closed (its process group killed) and both temporary folders removed. What
  comes back (:class:`CellResult`) is plain data — the journal's lines, the session id, the status — so
  the caller writes it under the run's folder, whether the cell ran here or on a Dask worker.
- The timeout bounds the whole cell (start-up, settings and every turn). When it fires the running
  turn is cancelled on the agent's side (its ``turn_end`` says so) and the cell is ``failed``.
- A turn that fails (the agent's error) or a connect that fails makes the cell ``failed`` with that
  error on one line (its stderr lines, the crash's cause, joined with `` | ``, up to
  :data:`ERROR_CHARS`); a closed connection ends the cell's remaining prompts.
- The cell's temporary folder (``silo-grid-<pid>-<cell>-…`` in the temp folder: the working copy under
  ``work/``, the journals under ``data/``) holds a ``lockf`` lock on ``.alive`` while the cell runs. A
  grid killed with ``kill -9`` cannot remove its folders: each cell sweeps the ones of this user whose
  process is gone (their lock is free) before it starts.
- :func:`run_cell_blocking` is the Dask task (and what a user's executor calls in a thread, a process
  or on another machine): such a thread has no event loop, so it starts one for the cell
  (``anyio.run``). That is the one place silo_nb makes a loop, and it never runs on the kernel's loop:
  the notebook side awaits the task's future (or the thread) instead.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import stat
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from silo_nb.experiments.policy import PermissionPolicy
from silo_nb.sessions.agents import AgentsService
from silo_nb.sessions.errors import AgentSessionError
from silo_nb.sessions.journal import read_lines
from silo_nb.sessions.status import now_iso

__all__ = ["ERROR_CHARS", "CellResult", "CellSpec", "one_line_error", "run_cell", "run_cell_blocking"]

ERROR_CHARS = 2000
_PREFIX = "silo-grid-"


@dataclass(frozen=True)
class CellSpec:
    """What one cell runs (picklable: it travels to Dask workers)."""

    cell: str
    profile: str
    config: dict[str, Any]
    prompts: tuple[str, ...]
    timeout: float
    policy: PermissionPolicy | None = None
    template: str | None = None
    config_dirs: tuple[str, ...] | None = None


@dataclass
class CellResult:
    """What a cell gives back: its journal lines and how it went."""

    cell: str
    status: str = "failed"
    session_id: str | None = None
    error: str | None = None
    lines: list[str] = field(default_factory=list)
    started: str = ""
    ended: str = ""
    seconds: float = 0.0
    host: str = ""
    pid: int = 0

    def record(self) -> dict[str, Any]:
        """The done record written under the run's folder (everything but the lines)."""
        return {k: v for k, v in vars(self).items() if k != "lines"}


async def run_cell(spec: CellSpec) -> CellResult:
    """Run one cell on this loop (see the module docstring); never raises for the agent's failures."""
    result = CellResult(spec.cell, started=now_iso(), host=socket.gethostname(), pid=os.getpid())
    start = time.monotonic()
    sweep_stale_folders()
    folder = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-{spec.cell}-"))
    alive = os.open(folder / ".alive", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.lockf(alive, fcntl.LOCK_EX)
        work, data = folder / "work", folder / "data"
        if spec.template:
            shutil.copytree(spec.template, work, symlinks=True, dirs_exist_ok=True)
        else:
            work.mkdir(mode=0o700)
        service = AgentsService(workspace_dir=work, data_dir=data, config_dirs=spec.config_dirs)
        await _drive(service, spec, str(work), result)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        os.close(alive)
        result.ended = now_iso()
        result.seconds = round(time.monotonic() - start, 3)
    return result


def sweep_stale_folders() -> None:
    """Remove the cell folders of this user whose process is gone (see the module notes)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{_PREFIX}*-*"):
        pid = folder.name[len(_PREFIX) :].partition("-")[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue  # another layout, or this process's own (its lock would not tell)
        try:
            info = folder.lstat()
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
                continue
            fd = os.open(folder / ".alive", os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free: nobody runs that cell any more
        except OSError:
            continue
        finally:
            os.close(fd)
        shutil.rmtree(folder, ignore_errors=True)


async def _drive(service: AgentsService, spec: CellSpec, work: str, result: CellResult) -> None:
    handle = None
    errors: list[str] = []
    try:
        with anyio.move_on_after(spec.timeout) as scope:
            handle = await service.sessions.connect(spec.profile, cwd=work)
            result.session_id = handle.session_id
            if spec.policy is not None:
                handle.on_permission(spec.policy)
            for option_id, value in spec.config.items():
                await handle.set_config_option(option_id, value)
            for prompt in spec.prompts:
                try:
                    await handle.prompt([{"type": "text", "text": prompt}])
                except AgentSessionError as exc:
                    errors.append(one_line_error(exc))
                    if not handle.is_live:
                        break
        if scope.cancelled_caught:
            errors.append(f"timed out after {spec.timeout:g} s")
    except (AgentSessionError, ValueError, OSError) as exc:  # connect or a config option failed
        errors.append(one_line_error(exc))
    finally:
        if handle is not None:
            with anyio.CancelScope(shield=True):
                await handle.aclose()  # the agent's process group is gone and the journal flushed
            result.session_id = handle.session_id
            path = service.sessions.journals.path(service.workspace_id, handle.session_id)
            result.lines = read_lines(path, root=service.data_dir)
    result.error = "; ".join(errors) or None
    result.status = "failed" if errors else "finished"


def one_line_error(exc: BaseException, *, prefix: str = "") -> str:
    """``exc``'s message on one line: its lines (the stderr lines stating a crash's cause too) joined with
    `` | ``, cut at :data:`ERROR_CHARS`."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("Agent stderr")]
    text = prefix + (" | ".join(lines) if lines else type(exc).__name__)
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…"


def run_cell_blocking(spec: CellSpec) -> CellResult:
    """Run the cell on a new event loop in this thread, which must not be running one (a pool's, Dask's)."""
    return anyio.run(run_cell, spec, backend="asyncio")


def template_folder(template: str | os.PathLike[str] | None) -> str | None:
    """The template folder as an absolute path, checked; None when there is none."""
    if template is None:
        return None
    path = Path(template).expanduser().resolve()
    if not path.is_dir():
        raise ValueError(
            f"template={os.fspath(template)!r} is not a folder — give the folder to copy per cell."
        )
    return str(path)
