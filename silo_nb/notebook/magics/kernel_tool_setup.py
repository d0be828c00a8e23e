"""The kernel tools of a connection made from this kernel (``%silo connect``): the "notebook" MCP server on
the shell's own namespace, offered to the agent through ``connect(mcp_servers=...)``.

- On unless the profile says ``kernel_tools = false`` or the connect says ``--no-kernel-tools``; a
  reconnect of the same name (``%silo login``, the agents list's Resume) keeps what the connection had.
- The server lends the tools the shell's ``user_ns``, the names IPython hides, its ``transform_cell`` and
  its display formatter's ``text/plain`` and ``image/png`` (``kernel_tools.KernelNamespace``).
- It lives as long as the connection: :meth:`NotebookSession.drop` (disconnect, a reconnect, a failed
  connect) closes it, and its socket folder goes with it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from silo_nb.kernel_tools import KernelNamespace, KernelToolServer

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from silo_nb.notebook.magics.connections import NotebookSession

__all__ = ["kernel_namespace", "notebook_cell_id", "start_kernel_tools"]

log = logging.getLogger("silo_nb.notebook")

_FORMATS = ("text/plain", "image/png")


def notebook_cell_id(shell: InteractiveShell) -> str | None:
    """The running cell's id in its notebook, as Jupyter sent it with the execution (``metadata.cellId``;
    JupyterLab and Notebook 7 send it, nbclient does not). Asked in the cell itself: the kernel keeps the
    request in a context variable the kernel tools' own task does not see."""
    kernel = getattr(shell, "kernel", None)
    get_parent = getattr(kernel, "get_parent", None)
    parent = get_parent() if callable(get_parent) else None
    metadata = parent.get("metadata") if isinstance(parent, dict) else None
    cell_id = metadata.get("cellId") if isinstance(metadata, dict) else None
    return cell_id if isinstance(cell_id, str) else None


def kernel_namespace(shell: InteractiveShell) -> KernelNamespace:
    """The shell's namespace, and what it lends for running code like a cell."""
    formatter = shell.display_formatter

    def format_value(value: Any) -> dict[str, Any]:
        assert formatter is not None
        data, _metadata = formatter.format(value, include=_FORMATS)  # type: ignore[no-untyped-call]
        return dict(data)

    return KernelNamespace(
        shell.user_ns,
        hidden=shell.user_ns_hidden,
        transform=shell.transform_cell,
        format_value=format_value if formatter is not None else None,
        execution_count=lambda: int(shell.execution_count),
    )


async def start_kernel_tools(
    session: NotebookSession, profile_id: str, wanted: bool | None
) -> KernelToolServer | None:
    """A started server for a connection to ``profile_id`` (None: off, or no such profile)."""
    profile = next((p for p in session.service.profiles.list() if p.id == profile_id), None)
    if profile is None or wanted is False or (wanted is None and not profile.kernel_tools):
        return None
    server = KernelToolServer(
        kernel_namespace(session.shell),
        run_code_timeout=profile.run_code_timeout,
        cell_changes_per_turn=profile.cell_changes_per_turn,
        checkpoint_max_bytes=profile.checkpoint_max_bytes,
    )
    try:
        return await server.start()
    except OSError as exc:  # no socket here (a read-only temp folder…): connect without the tools
        server.close()
        log.warning("kernel tools are off for this connection: their socket could not be made (%s)", exc)
        return None
