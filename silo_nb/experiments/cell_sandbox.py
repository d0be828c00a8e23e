"""``run_grid(sandbox=...)``: each cell's agent and its terminals in a sandbox (``acp/sandbox.py``).

- :func:`grid_sandbox` checks what ``run_grid`` was given before anything runs: a kind (``"bwrap"``,
  ``"podman"``, ``"docker"``), a :class:`~silo_nb.acp.Sandbox` (more read-only paths, no network…) or
  None. A sandbox that cannot run on this machine is refused in one line naming what to install or start
  (``SandboxUnavailable``, a ``ValueError``), and so is anything else.
- :func:`cell_sandbox` is the cell's side, where it runs (a Dask worker too): the same check there, since
  a worker may lack the tool — the cell then fails saying so — then the sandbox the cell's
  ``AgentsService`` spawns in. The session binds the cell's working copy read-write; the cell's journals
  (``data/``, beside the copy) and every other cell's folder stay outside.
- :func:`in_sandbox` words a failure of a sandboxed cell: "the agent exited in the sandbox (bwrap): …"
  with the exit's stderr excerpt, so a sandbox that killed the agent (a file it needs hidden, a write
  refused) reads as such in the row.
"""

from __future__ import annotations

from silo_nb.acp import SANDBOX_KINDS, Sandbox, SandboxUnavailable, sandbox_problem

__all__ = ["cell_sandbox", "grid_sandbox", "in_sandbox", "sandbox_label"]

_EXITED = ("agent exited with code", "ACP connection closed", "Could not start")


async def grid_sandbox(sandbox: str | Sandbox | None) -> str | Sandbox | None:
    """``run_grid``'s ``sandbox=`` checked on this machine (see the module docstring)."""
    if sandbox is None:
        return None
    if not isinstance(sandbox, str | Sandbox):
        raise TypeError(
            f"sandbox= takes one of {', '.join(SANDBOX_KINDS)}, a silo_nb Sandbox or None — "
            f"not {type(sandbox).__name__}."
        )
    kind = sandbox.kind if isinstance(sandbox, Sandbox) else sandbox
    problem = await sandbox_problem(kind)
    if problem is not None:
        raise SandboxUnavailable(problem)
    return sandbox


async def cell_sandbox(sandbox: str | Sandbox | None) -> Sandbox | None:
    """The cell's sandbox, checked where the cell runs; raises ``SandboxUnavailable`` (one line)."""
    checked = await grid_sandbox(sandbox)
    return Sandbox(checked) if isinstance(checked, str) else checked


def sandbox_label(sandbox: str | Sandbox | None) -> str | None:
    """What the row's ``sandbox`` column says: the kind that ran the cell, or None."""
    return sandbox.kind if isinstance(sandbox, Sandbox) else sandbox


def in_sandbox(error: str | None, sandbox: str | Sandbox | None) -> str | None:
    """``error`` of a sandboxed cell, saying the agent ended inside the sandbox when that is what it was."""
    label = sandbox_label(sandbox)
    if error is None or label is None or not any(mark in error for mark in _EXITED):
        return error
    return f"the agent exited in the sandbox ({label}): {error}"
