"""``QuestionForm``: the agent asks the user something (ACP elicitation): a form of ordinary widgets, or a
link to visit, inside the running turn, with Submit / Decline.

- One control per field (``model/question_schema.py`` reads them): text (a dropdown for a pick),
  a number or whole number, a checkbox, a multi-select; titles are plain text (never HTML), required
  fields marked. A pick's choices are the bounded, short-labelled ones the schema reader kept; a cut is
  said beside the control ("first 1,000 of 200,000 choices"). At most :data:`SHOWN_FIELDS` controls;
  the rest are counted in a line (their defaults are sent). A url question shows its link (a link only
  when ``md_html.safe_url`` allows it) and "I opened it" / Decline.
- :meth:`submit` is the Python twin of Submit (values by field name; the controls' values when none are
  given), :meth:`decline` of Decline. ``request.accept`` checks the values first: a wrong one shows its
  one-line error under the form and nothing is sent. The first answer wins; later clicks change nothing.
- Answered elsewhere (a Stop, the agent withdrawing it, a listener): :meth:`refresh` disables the form
  and says how it ended. The transcript shows the question and its answer from their journal lines.
"""

from __future__ import annotations

import html as html_text
from collections.abc import Callable, Mapping
from typing import Any

from silo_nb.model import (
    AgentElicitationRequest,
    QuestionField,
    read_fields,
)
from silo_nb.notebook.render import styles
from silo_nb.notebook.render.md_html import safe_url
from silo_nb.notebook.widgets._common import close_tree, esc, ipw, log

__all__ = ["SHOWN_FIELDS", "QuestionForm"]

SHOWN_FIELDS = 50
_ENDED = {"accept": "✓ answered", "decline": "✗ declined", "cancel": "cancelled"}


def _control(field: QuestionField) -> Any:
    layout = ipw.Layout(width="auto")
    default = field.default
    if field.type == "boolean":
        return ipw.Checkbox(value=default is True, indent=False, layout=layout)
    if field.type == "integer":
        return ipw.IntText(value=default if type(default) is int else 0, layout=layout)
    if field.type == "number":
        number = default if isinstance(default, (int, float)) and not isinstance(default, bool) else 0.0
        return ipw.FloatText(value=float(number), layout=layout)
    if field.type == "array":
        options = [(title, value) for value, title in field.choices]
        chosen = tuple(v for v in default if v in dict(field.choices)) if isinstance(default, list) else ()
        rows = min(len(options), 6) or 1
        return ipw.SelectMultiple(options=options, value=chosen, rows=rows, layout=layout)
    if field.choice_count:
        options = [(title, value) for value, title in field.choices]
        value = default if default in dict(field.choices) else None
        return ipw.Dropdown(options=options, value=value, layout=layout)
    return ipw.Text(value=default if isinstance(default, str) else "", layout=layout)


def _cut_note(field: QuestionField) -> Any | None:
    """Said next to a pick whose choices were cut (``question_schema`` bounds them), else None."""
    if field.choice_count <= len(field.choices):
        return None
    note = f"first {len(field.choices):,} of {field.choice_count:,} choices"
    return ipw.HTML(value=f'<i style="{styles.MUTED}">{note}</i>')


def _label(field: QuestionField) -> Any:
    required = f' <span style="color:rgb({styles.RED})">*</span>' if field.required else ""
    title = esc(field.title) + required
    tip = f' title="{esc(field.description)}"' if field.description else ""
    return ipw.HTML(value=f"<span{tip}>{title}</span>", layout=ipw.Layout(min_width="8em"))


class QuestionForm(ipw.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    """A question as a form; answer with Submit / Decline or :meth:`submit` / :meth:`decline`."""

    def __init__(
        self,
        request: AgentElicitationRequest,
        on_answer: Callable[[AgentElicitationRequest], None] | None = None,
    ) -> None:
        self.request = request
        self._on_answer = on_answer
        self._reported = False
        self.fields, total = read_fields(request.requested_schema) if request.mode == "form" else ((), 0)
        self.controls: dict[str, Any] = {}
        asker = f"<b>{esc(request.child_title)}</b> asks — " if request.child_title else ""
        rows: list[Any] = [ipw.HTML(value=f"{asker}<b>? Question:</b> {esc(request.message)}")]
        for field in self.fields[:SHOWN_FIELDS]:
            if not field.answerable:
                continue
            control = _control(field)
            self.controls[field.name] = control
            note = _cut_note(field)
            row = [_label(field), control] if note is None else [_label(field), control, note]
            rows.append(ipw.HBox(row, layout=ipw.Layout(align_items="center")))
        hidden = max(total, len(self.fields)) - min(len(self.fields), SHOWN_FIELDS)
        if hidden > 0:
            note = f"… {hidden:,} more fields (their defaults are sent)"
            rows.append(ipw.HTML(value=f'<i style="{styles.MUTED}">{note}</i>'))
        if request.mode == "url" and request.url is not None:
            url = html_text.escape(request.url, quote=True)
            link = (
                f'<a href="{url}" target="_blank" rel="noopener noreferrer">{url}</a>'
                if safe_url(request.url)
                else f"<code>{url}</code> (not a web link: copy it only if you trust it)"
            )
            rows.append(ipw.HTML(value=f"Open: {link}"))
        submit_label = "I opened it" if request.mode == "url" else "Submit"
        self.submit_button: Any = ipw.Button(
            description=submit_label, button_style="primary", layout=ipw.Layout(width="auto")
        )
        self.decline_button: Any = ipw.Button(description="Decline", layout=ipw.Layout(width="auto"))
        self.submit_button.on_click(lambda _button: self._clicked_submit())
        self.decline_button.on_click(lambda _button: self.decline())
        self.error_html: Any = ipw.HTML(value="")
        self.status_html: Any = ipw.HTML(value="")
        rows.append(ipw.HBox([self.submit_button, self.decline_button, self.status_html]))
        rows.append(self.error_html)
        super().__init__(children=rows, layout=ipw.Layout(border_left="3px solid", padding="2px 8px"))
        if request.answered:
            self.refresh()

    @property
    def answered(self) -> bool:
        return self.request.answered

    def values(self) -> dict[str, Any]:
        """What the controls hold now, by field name (an empty text, an unpicked pick or, unless required,
        an empty multi-select: left out)."""
        required = {f.name for f in self.fields if f.required}
        values: dict[str, Any] = {}
        for name, control in self.controls.items():
            value = control.value
            if isinstance(value, tuple):
                value = list(value)
            if value is None or value == "" or (value == [] and name not in required):
                continue
            values[name] = value
        return values

    def submit(self, values: Mapping[str, Any] | None = None) -> bool:
        """Answer ``accept`` with ``values`` (the controls' when None). True if this call was the answer;
        a value that does not fit shows its error and returns False (nothing is sent)."""
        if self.request.answered:
            self.refresh()
            return False
        chosen = dict(values) if values is not None else ({} if self.request.mode == "url" else self.values())
        try:
            self.request.accept(chosen)
        except ValueError as exc:
            self.error_html.value = f'<span style="{styles.ERROR_TEXT}">{esc(str(exc))}</span>'
            return False
        self.error_html.value = ""
        self.refresh()
        return True

    def decline(self) -> bool:
        """Answer ``decline`` (the Decline button's twin). True if this call was the answer."""
        if self.request.answered:
            self.refresh()
            return False
        self.request.decline()
        self.refresh()
        return True

    def refresh(self) -> None:
        """Show the request's current state (answered here or elsewhere: the form is disabled)."""
        if not self.request.answered:
            return
        for control in (*self.controls.values(), self.submit_button, self.decline_button):
            control.disabled = True
        self.status_html.value = f"<b>{esc(_ENDED.get(self.request.action or 'cancel', 'cancelled'))}</b>"
        if not self._reported:
            self._reported = True
            if self._on_answer is not None:
                try:
                    self._on_answer(self.request)
                except Exception:
                    log.exception("a question on_answer callback raised")

    def close_all(self) -> None:
        close_tree(self)

    def _clicked_submit(self) -> None:
        self.submit()
