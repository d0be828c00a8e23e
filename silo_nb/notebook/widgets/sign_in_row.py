"""``SignInRow``: the session panel's "sign-in needed" line and its Sign in button.

- Hidden until a turn ends because the agent wants a sign-in: its journaled ``turn_end`` line
  (``sessions/session/turn_tracker.py``) carries ``signIn`` (the method ids); the next turn that ends
  otherwise hides it.
- The button calls ``on_sign_in`` (the magics run ``%silo login`` for an agent method, or show the
  advice: the variable to set, the terminal command); with no callback it is disabled.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from silo_nb.model import (
    AgentSessionUpdate,
)
from silo_nb.notebook.render import styles
from silo_nb.notebook.widgets._common import ipw

__all__ = ["SignInRow"]


class SignInRow(ipw.HBox):  # type: ignore[misc]  # ipywidgets is untyped
    def __init__(self, on_sign_in: Callable[[], None] | None = None) -> None:
        self.button: Any = ipw.Button(
            description="Sign in",
            icon="sign-in",
            disabled=on_sign_in is None,
            layout=ipw.Layout(width="auto"),
        )
        label = ipw.HTML(value=f'<span style="{styles.ERROR_TEXT}">⚠ sign-in needed</span>')
        super().__init__(
            children=[label, self.button], layout=ipw.Layout(display="none", align_items="center")
        )
        if on_sign_in is not None:
            self.button.on_click(lambda _button: on_sign_in())

    @property
    def shown(self) -> bool:
        return bool(self.layout.display != "none")

    def observe_update(self, update: AgentSessionUpdate) -> None:
        """Show or hide on a turn's journaled end; other updates change nothing."""
        if update.kind == "turn_end":
            self.layout.display = "flex" if update.raw.get("signIn") else "none"
