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
  one-line error; a closed connection ends the cell's remaining prompts.
- ``kernel_tools`` (``run_grid(kernel_tools=True)``): the cell's session is offered the kernel tools on
  this process's ``__main__`` namespace (a kernel's: the user's), only where the cell runs on this loop;
  ``run_code`` then needs the policy's ``allow code``.
- :func:`run_cell_blocking` is the Dask task (and what a user's executor calls in a thread, a process
  or on another machine): such a thread has no event loop, so it starts one for the cell
  (``anyio.run``). That is the one place silo_nb makes a loop, and it never runs on the kernel's loop:
  the notebook side awaits the task's future (or the thread) instead.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from silo_nb.experiments.policy import PermissionPolicy
from silo_nb.kernel_tools import KernelNamespace, KernelToolServer
from silo_nb.sessions.agents import AgentsService
from silo_nb.sessions.errors import AgentSessionError
from silo_nb.sessions.status import now_iso

__all__ = ["CellResult", "CellSpec", "run_cell", "run_cell_blocking"]

# What IPython puts in a kernel's namespace (not the user's variables).
_IPYTHON_NAMES = frozenset({"In", "Out", "get_ipython", "exit", "quit", "open"})


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
    kernel_tools: bool = False


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
    work = tempfile.mkdtemp(prefix=f"silo-grid-{spec.cell}-")
    data = tempfile.mkdtemp(prefix="silo-grid-journal-")
    try:
        if spec.template:
            shutil.copytree(spec.template, work, symlinks=True, dirs_exist_ok=True)
        service = AgentsService(workspace_dir=work, data_dir=data, config_dirs=spec.config_dirs)
        await _drive(service, spec, work, result)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(data, ignore_errors=True)
        result.ended = now_iso()
        result.seconds = round(time.monotonic() - start, 3)
    return result


async def _kernel_tools(service: AgentsService, spec: CellSpec) -> KernelToolServer | None:
    """The kernel tools on ``__main__`` for a cell that asks for them (see the module docstring)."""
    if not spec.kernel_tools:
        return None
    summary = next((p for p in service.profiles.list() if p.id == spec.profile), None)
    timeout = summary.run_code_timeout if summary is not None else 60.0
    namespace = KernelNamespace(sys.modules["__main__"].__dict__, hidden=_IPYTHON_NAMES)
    return await KernelToolServer(namespace, run_code_timeout=timeout).start()


async def _drive(service: AgentsService, spec: CellSpec, work: str, result: CellResult) -> None:
    handle = None
    tools = None
    errors: list[str] = []
    try:
        with anyio.move_on_after(spec.timeout) as scope:
            tools = await _kernel_tools(service, spec)
            servers = [tools.server_config] if tools is not None else []
            handle = await service.sessions.connect(spec.profile, cwd=work, mcp_servers=servers)
            if tools is not None:
                tools.bind(handle)
            result.session_id = handle.session_id
            if spec.policy is not None:
                handle.on_permission(spec.policy)
            for option_id, value in spec.config.items():
                await handle.set_config_option(option_id, value)
            for prompt in spec.prompts:
                try:
                    await handle.prompt([{"type": "text", "text": prompt}])
                except AgentSessionError as exc:
                    errors.append(_one_line(exc))
                    if not handle.is_live:
                        break
        if scope.cancelled_caught:
            errors.append(f"timed out after {spec.timeout:g} s")
    except (AgentSessionError, ValueError, OSError) as exc:  # connect or a config option failed
        errors.append(_one_line(exc))
    finally:
        if tools is not None:
            tools.close()
        if handle is not None:
            with anyio.CancelScope(shield=True):
                await handle.aclose()  # the agent's process group is gone and the journal flushed
            result.session_id = handle.session_id
            path = service.sessions.journals.path(service.workspace_id, handle.session_id)
            with contextlib.suppress(OSError):
                result.lines = path.read_text(encoding="utf-8").splitlines()
    result.error = "; ".join(errors) or None
    result.status = "failed" if errors else "finished"


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


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
