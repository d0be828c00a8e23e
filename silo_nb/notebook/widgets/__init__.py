"""The notebook's live widgets, built from core ipywidgets only (no JavaScript of our own).

One widget per module; each is a ``VBox``/``HBox`` subclass whose user actions all have a Python twin
(``PermissionRow.choose``, ``TurnView.stop``, ``SessionPanel.select``/``run``, ``AgentsList.acknowledge``),
so everything is testable without a browser. Widgets display state that others own (a
``LiveTranscript``, the handle's options and commands, ``AgentsService`` status) and keep none of their
own. Rendering of transcripts is ``silo_nb.notebook.render``'s; widget updates are paced by
:class:`Throttle` so a fast agent cannot flood the frontend.
"""

from __future__ import annotations

from silo_nb.notebook.widgets.agents_list import AgentsList
from silo_nb.notebook.widgets.background import BackgroundActivity
from silo_nb.notebook.widgets.permission_row import PermissionRow
from silo_nb.notebook.widgets.session_panel import PanelHandle, SessionPanel
from silo_nb.notebook.widgets.throttle import Throttle, Ticker
from silo_nb.notebook.widgets.turn_view import TurnView

__all__ = [
    "AgentsList",
    "BackgroundActivity",
    "PanelHandle",
    "PermissionRow",
    "SessionPanel",
    "Throttle",
    "Ticker",
    "TurnView",
]
