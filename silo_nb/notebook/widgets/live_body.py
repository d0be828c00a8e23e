"""``LiveBody``: a live transcript as a stack of HTML segments, re-sent only where something changed.

- Re-sending the whole transcript's HTML on every tick cost 1.4 MB per tick at 10k chunks and made
  ipykernel stop answering. Here the box is a ``VBox`` of ``HTML`` widgets: a header, entry segments
  (runs of consecutive entries, a new one opened once the last holds :data:`SEGMENT_CHARS`), a footer.
  An update changes one entry, so one segment is re-sent; older segments are never sent again.
- Traffic is paced by two token buckets, whatever the agent sends: at most :data:`CHARS_PER_SECOND` of
  HTML (burst :data:`BURST_CHARS`) and :data:`MESSAGES_PER_SECOND` widget messages. What does not fit in
  a tick waits for the next (the newest segment first); a flood of entries is placed as the budget
  allows, and the footer says how many wait. Segment widgets share one ``Layout`` and one style model,
  so a new segment is one ``comm_open`` plus the box's ``children`` update.
- Entries are rendered for the live view by :func:`~silo_nb.notebook.render.live_entries.live_entry_html`
  (streaming Markdown block cache, long replies cut); :meth:`show_all` lifts the cuts. Once the turn
  has ended every entry is rendered whole, so :attr:`html` — the pieces in the saved transcript's box
  — is exactly the HTML the static bundle saves.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

from ipywidgets.widgets.widget_string import HTMLStyle  # type: ignore[import-untyped, unused-ignore]

from silo_nb.notebook.render import styles
from silo_nb.notebook.render.html import box_html, empty_html, footer_html, turn_header_html
from silo_nb.notebook.render.live_entries import live_entry_html
from silo_nb.notebook.widgets._common import ipw
from silo_nb.updates import (
    TranscriptState,
)

__all__ = ["CHARS_PER_SECOND", "MESSAGES_PER_SECOND", "SEGMENT_CHARS", "LiveBody"]

SEGMENT_CHARS = 8_000  # a segment this full is closed; new entries go to a new one
CHARS_PER_SECOND = 50_000  # HTML sent per second, sustained (with the burst and one message: ≤ 100 KB/s)
BURST_CHARS = 10_000
MESSAGES_PER_SECOND = 14.0  # widget messages per second, sustained (the badge adds one per second)
BURST_MESSAGES = 3.0
# The box's text style on each segment (the box itself is the VBox: border and padding from its layout).
_TEXT_STYLE = ";".join(
    part
    for part in styles.BOX.split(";")
    if not part.startswith(("padding", "border", "box-sizing", "width"))
)


class _Bucket:
    """A token bucket; a send may overdraw it once (a message is never split)."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst = rate, burst
        self.tokens, self._at = burst, time.monotonic()

    def available(self) -> float:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self._at) * self.rate)
        self._at = now
        return self.tokens


@dataclass
class _Segment:
    widget: Any
    start: int  # first entry index
    stop: int  # one past the last
    chars: int = 0
    dirty: bool = True


class LiveBody:
    """The transcript part of a live turn view: ``box`` is the widget to show."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._layout: Any = ipw.Layout(margin="0", width="100%")
        self._style: Any = HTMLStyle()
        self._chars = _Bucket(CHARS_PER_SECOND, BURST_CHARS)
        self._messages = _Bucket(MESSAGES_PER_SECOND, BURST_MESSAGES)
        self._pieces: list[str] = []  # each placed entry's live HTML
        self._cut: set[int] = set()  # entries shown cut
        self._whole = False
        self._rerender = False  # every entry again at the next render (show all, the turn's end)
        self._empty = ""
        self.header: Any = self._html("")
        self.footer: Any = self._html("")
        self._segments = [_Segment(self._html(""), 0, 0)]
        self._starts = [0]  # each segment's first entry (for bisect)
        border = f"1px solid {styles.rgba(styles.GREY, 0.25)}"
        self.box: Any = ipw.VBox(
            children=[self.header, self._segments[0].widget, self.footer],
            layout=ipw.Layout(border=border, padding="6px 10px", margin="0", width="100%"),
        )
        self.box.add_class("silo-transcript")
        self._header_html = self._footer_html = ""
        self.waiting = 0  # entries not placed yet (over the budget)

    def _html(self, value: str) -> Any:
        return ipw.HTML(value=value, layout=self._layout, style=self._style)

    # -- what it shows ----------------------------------------------------------------------------

    @property
    def html(self) -> str:
        """What the live view holds, in the saved transcript's box (equal to it once the turn ended)."""
        body = "".join(self._pieces)
        return box_html(self._header_html + (body or self._empty) + self._footer_html)

    @property
    def cut(self) -> bool:
        """Whether some entry is shown cut (the "Show all" control is offered)."""
        return bool(self._cut)

    def show_all(self) -> None:
        """Show every entry whole from now on (at the paced rate)."""
        self._whole = self._rerender = True

    # -- rendering --------------------------------------------------------------------------------

    def render(self, state: TranscriptState, changed: set[int] | None, *, force: bool = False) -> bool:
        """Bring the widgets up to ``state`` as far as the budgets allow; True when everything is sent.

        ``changed``: entries changed since the last call (None: maybe all). ``force``: everything now,
        whatever the budgets (an explicit flush)."""
        ended = state.status != "running"
        if ended and not self._whole:
            self._whole = self._rerender = True  # the saved transcript shows every entry whole
        whole = self._whole
        if changed is None or self._rerender:
            changed = set(range(len(self._pieces)))
            self._rerender = False
        for index in sorted(changed):
            if index < len(self._pieces):
                self._place(index, state, whole)
        self._empty = empty_html(state)
        budget = self._chars.available()
        while len(self._pieces) < len(state.entries) and (ended or force or budget > 0):
            added = self._place(len(self._pieces), state, whole, paced=not (ended or force))
            if added is None:
                break  # no message budget for a new segment now
            budget -= added
        self.waiting = len(state.entries) - len(self._pieces)
        self._header_html = turn_header_html(state, label=self.label)
        self._footer_html = footer_html(state, with_status=False)
        if self.waiting:
            # No count in it: a note that changed every tick would cost a message every tick.
            note = "live view paced: more entries show as the budget allows; all of them when the turn ends"
            self._footer_html += f'<div style="{styles.SMALL};{styles.MUTED}">{note}</div>'
        return self._send(force)

    def _place(self, index: int, state: TranscriptState, whole: bool, *, paced: bool = False) -> int | None:
        """Render entry ``index`` into its segment (a new one is opened for a new entry when the last
        is full); the characters it added. None: ``paced``, and no message budget for a new segment."""
        if (
            paced
            and index >= len(self._pieces)
            and self._segments[-1].chars >= SEGMENT_CHARS
            and self._messages.available() < 3
        ):
            return None
        piece, cut = live_entry_html(state.entries[index], whole=whole)
        (self._cut.add if cut else self._cut.discard)(index)
        if index < len(self._pieces):
            segment = self._segments[bisect_right(self._starts, index) - 1]
            segment.chars += len(piece) - len(self._pieces[index])
            self._pieces[index] = piece
        else:
            segment = self._segments[-1]
            if segment.chars >= SEGMENT_CHARS and segment.stop > segment.start:
                segment = _Segment(self._html(""), index, index)
                self._segments.append(segment)
                self._starts.append(index)
                self.box.children = (*self.box.children[:-1], segment.widget, self.footer)
                self._messages.tokens -= 2  # its comm_open and the box's children update
            self._pieces.append(piece)
            segment.stop, segment.chars = index + 1, segment.chars + len(piece)
        segment.dirty = True
        return len(piece)

    def _send(self, force: bool) -> bool:
        """Assign changed values (header and footer, then the newest segment first) within budget."""
        pending = [(self.header, self._header_html), (self.footer, self._footer_html)]
        for segment in reversed(self._segments):
            if segment.dirty:
                body = "".join(self._pieces[segment.start : segment.stop])
                if not self._pieces and segment is self._segments[0]:
                    body = self._empty
                pending.append((segment, body))
        done = True
        for target, body in pending:
            widget = target.widget if isinstance(target, _Segment) else target
            value = f'<div style="{_TEXT_STYLE}">{body}</div>' if body else ""
            if widget.value == value:
                if isinstance(target, _Segment):
                    target.dirty = False
                continue
            if not force and (self._messages.available() < 1 or self._chars.available() <= 0):
                done = False
                continue
            widget.value = value
            self._messages.tokens -= 1
            self._chars.tokens -= len(value)
            if isinstance(target, _Segment):
                target.dirty = False
        return done and not self.waiting
