"""``BackgroundActivity``: what an agent did on its own, outside prompt turns (a collapsed section).

- It displays a :class:`~silo_nb.notebook.live_transcript.LiveTranscript` that its owner feeds (the
  session panel feeds it every update that arrives while no prompt turn is active); it keeps no
  transcript itself.
- Rendering is throttled; the title counts the entries. While the agent is not working, the transcript
  is shown as finished (between agent turns nothing is running).
- Hidden until there is something to show: an empty section that expands to an empty box only puzzles.
"""

from __future__ import annotations

from typing import Any

from silo_nb.notebook.live_transcript import LiveTranscript
from silo_nb.notebook.render import transcript_html
from silo_nb.notebook.widgets._common import close_tree, ipw
from silo_nb.notebook.widgets.throttle import Throttle
from silo_nb.updates import (
    with_status,
)

__all__ = ["BACKGROUND_TITLE", "BackgroundActivity"]

BACKGROUND_TITLE = "Background activity"


class BackgroundActivity(ipw.Accordion):  # type: ignore[misc]  # ipywidgets is untyped
    def __init__(self, transcript: LiveTranscript | None = None, *, throttle: float = 0.1) -> None:
        self.transcript = transcript if transcript is not None else LiveTranscript()
        self.working = False
        self._closed = False
        self.body: Any = ipw.HTML(value="")
        super().__init__(
            children=[self.body],
            titles=(BACKGROUND_TITLE,),
            selected_index=None,
            layout=ipw.Layout(display="none"),
        )
        self._throttle = Throttle(throttle, self._render)
        self._watching = self.transcript.watch(self._throttle.poke)

    def set_working(self, working: bool) -> None:
        """Whether the agent is at it now (the footer says so); re-renders if there is anything to show."""
        if working != self.working:
            self.working = working
            if self.transcript.state.entries:
                self._throttle.poke()

    def flush(self) -> None:
        self._throttle.flush()

    def close_all(self) -> None:
        self._closed = True
        self._watching.dispose()
        self._throttle.cancel()
        close_tree(self)

    def _render(self) -> None:
        if self._closed:
            return
        state = self.transcript.state
        shown = state if self.working else with_status(state, "finished")
        self.body.value = transcript_html(shown)
        count = len(state.entries)
        self.titles = (f"{BACKGROUND_TITLE} ({count})" if count else BACKGROUND_TITLE,)
        self.layout.display = None if count else "none"
