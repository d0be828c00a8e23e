"""The notebook front end: transcript reducer, static rendering, widgets and IPython magics.

It consumes ``silo_nb.sessions`` only through plain models; it never touches JSON-RPC.
"""

from silo_nb.notebook.live_cell_view import CellView, attach_cell
from silo_nb.notebook.magics import load_ipython_extension, promote, unload_ipython_extension, wait
from silo_nb.notebook.results import report, show
from silo_nb.notebook.widgets.grid_progress import kernel_progress

__all__ = [
    "CellView",
    "attach_cell",
    "kernel_progress",
    "load_ipython_extension",
    "promote",
    "report",
    "show",
    "unload_ipython_extension",
    "wait",
]
