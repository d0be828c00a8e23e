"""``PermissionRow``: the agent asks before a tool call; one button per option *the agent* offered.

- Buttons carry the agent's own option names (never a fixed Yes/No), so a ``reject_*`` answer is a
  real rejection the agent understands, not a cancel. Options whose ``kind`` ends in ``_always`` grant
  or refuse something lasting: their label says "(always)" and a tooltip says so. Allow kinds are
  green (once) or amber (lasting), reject kinds red; kinds we do not know keep the default look.
- The first answer wins: :meth:`choose` (the Python twin of a click) calls ``request.respond``,
  disables every button and shows the choice. Later clicks and calls change nothing. A click handler
  only does that — it resolves the handle's pending answer and flips a few traits; no output, no I/O.
- The request can be settled elsewhere (``cancel()``, the turn ending, another front end answering):
  :meth:`refresh` notices, disables the buttons and shows "cancelled" (or the other choice).
- ``on_answer(request)`` is called exactly once, when the row first sees the request answered, so the
  owner (the turn view) can record the decision in the transcript.
- Bounded whatever the agent sends: at most :data:`MAX_OPTION_BUTTONS` buttons (a widget each; 10,000
  froze the kernel 12 s), then a line saying how many more there are; every option stays answerable
  with :meth:`choose` or ``request.respond`` (listeners see them all).
- A request to run code (a tool call of kind ``code``: the kernel tools' ``run_code``) shows the code,
  highlighted, above its buttons (:attr:`PermissionRow.code_html`): what is allowed is what is seen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from silo_nb.model import (
    AgentPermissionOption,
    AgentPermissionRequest,
)
from silo_nb.notebook.render import styles
from silo_nb.notebook.render.code import code_block_html, lexer_for_language
from silo_nb.notebook.widgets._common import close_tree, esc, ipw, log

__all__ = ["MAX_OPTION_BUTTONS", "PermissionRow", "code_of", "is_lasting"]

MAX_OPTION_BUTTONS = 12

LASTING_MARKER = " (always)"
LASTING_ALLOW_TOOLTIP = "Grants a lasting permission"
LASTING_REJECT_TOOLTIP = "A lasting rejection: applies from now on"

_CHOSEN = {
    "allow_once": "✓ Allowed once",
    "allow_always": "✓ Allowed always",
    "reject_once": "✗ Rejected once",
    "reject_always": "✗ Rejected always",
}


def is_lasting(option: AgentPermissionOption) -> bool:
    """True for options that grant or refuse something beyond this one call (``*_always``)."""
    return option.kind.endswith("_always")


def _style(option: AgentPermissionOption) -> str:
    if option.kind.startswith("allow"):
        return "warning" if is_lasting(option) else "success"
    if option.kind.startswith("reject"):
        return "danger"
    return ""


def _tooltip(option: AgentPermissionOption) -> str:
    if not is_lasting(option):
        return option.name
    return LASTING_ALLOW_TOOLTIP if option.kind.startswith("allow") else LASTING_REJECT_TOOLTIP


def code_of(request: AgentPermissionRequest) -> str | None:
    """The code a ``code`` request would run (None for any other request)."""
    call = request.tool_call
    if call is None or call.kind != "code" or not isinstance(call.raw_input, dict):
        return None
    code = call.raw_input.get("code")
    return code if isinstance(code, str) else None


def _chosen_html(option: AgentPermissionOption | None) -> str:
    if option is None:
        return f'<span style="{styles.FAINT_TEXT}">cancelled</span>'
    verb = _CHOSEN.get(option.kind, "✓ Chose")
    return f"<b>{esc(verb)}</b> — {esc(option.name)}"


class PermissionRow(ipw.HBox):  # type: ignore[misc]  # ipywidgets is untyped
    """A permission request as a row of buttons; answer with a click or :meth:`choose`."""

    def __init__(
        self,
        request: AgentPermissionRequest,
        on_answer: Callable[[AgentPermissionRequest], None] | None = None,
    ) -> None:
        self.request = request
        self._on_answer = on_answer
        self._reported = False
        # One Layout and one style for every button, and for the row's three texts: each is a widget of
        # its own (a comm the front end opens), so sharing them sends 4 such widgets instead of 2 a piece.
        button_layout, button_look = ipw.Layout(width="auto"), ipw.ButtonStyle()
        # A subagent's request says which child asks (ACP v1.25: its title, else its session id).
        asker = f"<b>{esc(request.child_title)}</b> asks — " if request.child_title else ""
        self.title_html: Any = ipw.HTML(value=f"{asker}<b>Permission:</b> {esc(request.title)}")
        text_layout, text_look = self.title_html.layout, self.title_html.style
        self.buttons: dict[str, Any] = {}
        for option in request.options[:MAX_OPTION_BUTTONS]:
            button = ipw.Button(
                description=option.name
                + (LASTING_MARKER if is_lasting(option) and "always" not in option.name.lower() else ""),
                button_style=_style(option),
                tooltip=_tooltip(option),
                layout=button_layout,
                style=button_look,
            )
            button.on_click(lambda _button, option_id=option.option_id: self._clicked(option_id))
            self.buttons[option.option_id] = button
        hidden = len(request.options) - len(request.options[:MAX_OPTION_BUTTONS])
        self.more_html: Any = ipw.HTML(
            value=f'<span style="{styles.FAINT_TEXT}">… {hidden:,} more options not shown — answer from '
            "Python: <code>handle.pending_permissions[0].respond(option_id)</code></span>"
            if hidden
            else "",
            layout=text_layout,
            style=text_look,
        )
        self.status_html: Any = ipw.HTML(value="", layout=text_layout, style=text_look)
        code = code_of(request)
        self.code_html: Any = (
            ipw.HTML(
                value=code_block_html(code, lexer_for_language("python")), layout=ipw.Layout(width="100%")
            )
            if code is not None
            else None
        )
        shown = [self.code_html] if self.code_html is not None else []
        super().__init__(
            children=[self.title_html, *shown, *self.buttons.values(), self.more_html, self.status_html],
            layout=ipw.Layout(flex_flow="row wrap", align_items="center"),
        )
        if request.answered:
            self.refresh()

    @property
    def answered(self) -> bool:
        """True once the request has an answer (a choice or cancelled), from here or elsewhere."""
        return self.request.answered

    @property
    def choice(self) -> AgentPermissionOption | None:
        """The option chosen, None while unanswered or when the request was cancelled."""
        answer = self.request.answer
        return next((o for o in self.request.options if o.option_id == answer), None)

    def choose(self, option_id: str) -> bool:
        """Answer with ``option_id`` (the Python twin of a click). True if this call was the answer.

        Raises ``ValueError`` for an id the agent did not offer; does nothing once answered.
        """
        if all(o.option_id != option_id for o in self.request.options):
            raise ValueError(f"{option_id!r} is not one of this request's options")
        if self.request.answered:
            self.refresh()
            return False
        self.request.respond(option_id)
        self.refresh()
        return True

    def refresh(self) -> None:
        """Show the request's current state (answered elsewhere → buttons off, "cancelled")."""
        if not self.request.answered:
            return
        chosen = self.choice
        for option_id, button in self.buttons.items():
            button.disabled = True
            if chosen is not None and option_id == chosen.option_id:
                button.icon = "check"
        self.status_html.value = _chosen_html(chosen)
        if not self._reported:
            self._reported = True
            if self._on_answer is not None:
                try:
                    self._on_answer(self.request)
                except Exception:
                    log.exception("a permission on_answer callback raised")

    def close_all(self) -> None:
        """Close this row and its buttons."""
        close_tree(self)

    def _clicked(self, option_id: str) -> None:
        # A click only answers; anything slower belongs to whoever awaits the answer.
        self.choose(option_id)
