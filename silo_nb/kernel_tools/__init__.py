"""The kernel as the agent's workbench: a "notebook" MCP server whose tools act on the live kernel.

- ``relay.py`` (``python -m silo_nb.kernel_tools``): the stdio MCP server the agent starts, written with
  the official ``mcp`` SDK; it relays each tool call to the kernel over a Unix socket (``wire.py``).
- ``socket_server.py`` (:class:`KernelToolServer`): the socket, in a 0700 folder, on the kernel's event
  loop; a random per-session token checked on every request; tools served only while a turn of the bound
  session runs, each call journaled there (``sessions/session/client_tool_calls.py``); ``run_code`` asks
  the user first, through the session's permission flow.
- ``tools.py`` with ``variables.py`` (``list_variables``, ``inspect_variable``), ``code_runner.py``
  (``run_code``), ``cells.py`` (``read_cells``, ``show_figure``), ``figures.py``: the tools, on a
  :class:`KernelNamespace` (``namespace.py``); ``guard.py`` bounds them in time; ``static_view.py`` reads
  values without running the user's code; ``limits.py`` holds every cap; ``report_text.py`` formats what
  the agent reads.
- ``stale_answers.py`` (:class:`StaleAnswers`): what each turn read, and what of it changed since (issue
  32: "df changed since this answer"); the server records the reads, the notebook layer checks after
  each cell.
- A layer above ``sessions`` that never imports IPython: the notebook layer (``%silo connect``) and
  ``run_grid(kernel_tools=True)`` lend it a namespace.
"""

from silo_nb.kernel_tools.namespace import KernelNamespace
from silo_nb.kernel_tools.notebook_tools import undo_changes
from silo_nb.kernel_tools.socket_server import KernelToolServer
from silo_nb.kernel_tools.stale_answers import NotebookCell, StaleAnswers, StaleSession
from silo_nb.kernel_tools.tools import KernelTools, ToolOutcome
from silo_nb.kernel_tools.turn_parts import RAN_STATUSES

__all__ = [
    "RAN_STATUSES",
    "KernelNamespace",
    "KernelToolServer",
    "KernelTools",
    "NotebookCell",
    "StaleAnswers",
    "StaleSession",
    "ToolOutcome",
    "undo_changes",
]
