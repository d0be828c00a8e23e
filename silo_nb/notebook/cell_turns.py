"""One ``%%prompt`` turn in a cell: live turn view → the agent's turn → a static bundle in its place.

- A ``Turn`` owns its transcript (a ``LiveTranscript``), fed from ``handle.on_transcript`` — the agent's
  updates and the synthesized prompt and permission lines, exactly what the journal records — and ended
  with a status; the ``TurnView`` only displays it. The view is shown synchronously while the cell runs
  (with a ``display_id``, or in a widget ``Output`` for palette turns); streaming then only mutates widget
  traits, which reach the frontend whenever they are sent.
- When the turn ends (finished, cancelled or failed) the output is replaced, under the same
  ``display_id``, by the same box (header row included) as a static ``text/html`` + ``text/markdown`` +
  ``text/plain`` bundle with
  ``metadata.silo``, and the turn's widgets are closed: a saved notebook shows every transcript without a
  kernel, and stays small.
- Background turns (``--bg``, ipykernel 7.0–7.3) are remembered by the shell's :class:`BackgroundTurns`
  (owned by its ``NotebookSession``) so ``await silo_nb.wait()`` can await them and re-publish their
  bundles from the current cell (headless runners only keep the running cell's output).
- A restored turn (already in the journal) is painted from the journal with no agent call.
"""

from __future__ import annotations

import asyncio
import html
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from silo_nb.model import (
    AgentSessionError,
    AgentSessionUpdate,
)
from silo_nb.notebook._display import display, html_object, update_display
from silo_nb.notebook._responsive import responsive_threads
from silo_nb.notebook.live_transcript import LiveTranscript
from silo_nb.notebook.render import static_bundle, styles
from silo_nb.task_set import TaskSet
from silo_nb.updates import (
    TranscriptState,
    TurnStatus,
    fold_all,
    with_status,
)

if TYPE_CHECKING:
    from silo_nb.notebook.widgets import SessionPanel, TurnView
    from silo_nb.sessions import AgentSessionHandle

__all__ = [
    "BackgroundTurns",
    "Turn",
    "display_restored",
    "new_display_id",
    "run_turn",
    "show_error",
    "show_placeholder",
    "start_turn",
]

log = logging.getLogger("silo_nb.notebook")

Bundle = tuple[dict[str, str], dict[str, Any]]


class BackgroundTurns:
    """Background work a cell did not wait for, and the final outputs to re-publish from ``wait()``'s cell."""

    def __init__(self) -> None:
        self.tasks = TaskSet()
        self._republish: dict[str, Bundle] = {}

    def track(self, task: asyncio.Task[Any]) -> None:
        """Remember a background task so :meth:`wait` waits for it."""
        self.tasks.add(task)

    def remember(self, display_id: str, bundle: Bundle) -> None:
        """``bundle`` is the final output under ``display_id``: re-published by :meth:`wait`."""
        self._republish[display_id] = bundle

    async def wait(self) -> None:
        """Wait for every background turn to end, then re-publish their final outputs from this cell."""
        await self.tasks.wait()
        for display_id, (data, metadata) in list(self._republish.items()):
            _update(data, metadata, display_id)
        self._republish.clear()

    def __len__(self) -> int:
        """Tasks running plus outputs waiting to be re-published (the tests' leak check reads it)."""
        return len(self.tasks) + len(self._republish)


@dataclass
class Turn:
    """One turn: it owns its transcript (fed from the handle, ended with a status); the view shows it."""

    handle: AgentSessionHandle
    blocks: list[Any]
    transcript: LiveTranscript
    view: TurnView
    display_id: str
    metadata: dict[str, Any]
    background: BackgroundTurns | None = None  # a background turn re-publishes its bundle from wait()
    bundle: tuple[dict[str, str], dict[str, Any]] | None = None
    panel: SessionPanel | None = None
    listeners: list[Any] = field(default_factory=list)
    # Where the final bundle goes; by default it replaces the cell output under ``display_id``.
    publish: Callable[[dict[str, str], dict[str, Any]], None] | None = None


def new_display_id() -> str:
    return f"silo-turn-{uuid.uuid4().hex}"


def show_placeholder(text: str) -> str:
    """Display a placeholder in the running cell now; later updates replace it (background turns)."""
    display_id = new_display_id()
    display({"text/plain": text, "text/html": f"<i>{html.escape(text)}</i>"}, raw=True, display_id=display_id)
    return display_id


def show_error(display_id: str, message: str, background: BackgroundTurns) -> None:
    html_text = f"<span style='{styles.ERROR_TEXT}'>✗ {html.escape(message)}</span>"
    data = {"text/plain": f"error: {message}", "text/html": html_text}
    background.remember(display_id, (data, {}))
    update_display(data, raw=True, display_id=display_id)


def _update(data: dict[str, str], metadata: dict[str, Any], display_id: str) -> None:
    update_display(data, raw=True, metadata=metadata, display_id=display_id)


def start_turn(
    handle: AgentSessionHandle,
    blocks: list[Any],
    *,
    metadata: dict[str, Any],
    panel: SessionPanel | None,
    background: BackgroundTurns | None,
    display_id: str | None = None,
    output: Any = None,
) -> Turn:
    """Display the live turn view now (synchronously) and return the turn to drive (``background``:
    the shell's background turns, when the cell does not wait for this one).

    By default the view goes into the running cell (replacing the placeholder ``display_id`` when one
    was displayed). With ``output`` (an ``ipywidgets.Output``, e.g. the session panel's) the view and
    then the final transcript go there instead: widget outputs are modelled on the kernel side, so
    every frontend shows them.
    """
    from silo_nb.notebook.widgets import TurnView

    transcript = LiveTranscript()
    view = TurnView(
        label=handle.agent_name,
        transcript=transcript,
        on_stop=handle.cancel,
        on_steer=handle.steer if handle.can_steer else None,
        on_stop_child=handle.cancel_child,
    )
    view.replaced_at_end = True  # _finish swaps it for the static bundle: no last whole render
    publish: Callable[[dict[str, str], dict[str, Any]], None] | None = None
    if output is not None:
        output.append_display_data(view)

        def publish(data: dict[str, str], _metadata: dict[str, Any]) -> None:
            output.outputs = ()
            output.append_display_data(html_object(data["text/html"]))

        display_id = ""
    elif display_id is None:
        display_id = new_display_id()
        display(view, display_id=display_id)
    else:
        update_display(view, display_id=display_id)
    return Turn(
        handle,
        blocks,
        transcript,
        view,
        display_id,
        metadata,
        background=background,
        panel=panel,
        publish=publish,
    )


async def run_turn(turn: Turn) -> None:
    """Send the prompt and stream into the view; always ends with the static bundle in place."""
    handle, view, transcript = turn.handle, turn.view, turn.transcript
    turn.listeners = [
        handle.on_transcript(transcript.apply),
        handle.on_permission(view.add_permission),
        handle.on_elicitation(view.add_question),
    ]
    if turn.panel is not None:
        turn.panel.turn_active = True
    try:
        with responsive_threads():
            result = await handle.prompt(turn.blocks, cell_id=turn.metadata.get("cell_id"))
        status: TurnStatus = "cancelled" if result.stop_reason == "cancelled" else "finished"
        transcript.set_status(status, stop_reason=result.stop_reason)
    except AgentSessionError as exc:
        transcript.set_status("failed", error=str(exc))
    except BaseException:
        # The stop button (an interrupt) or a cancelled background task: the turn was cancelled.
        transcript.set_status("cancelled", stop_reason="cancelled")
        raise
    finally:
        for listener in turn.listeners:
            listener.dispose()
        if turn.panel is not None:
            turn.panel.turn_active = False
        _finish(turn)


def _finish(turn: Turn) -> None:
    turn.metadata["turn"] = turn.handle.prompts_sent
    # title="": a turn's output needs no session title above its own prompt.
    turn.bundle = static_bundle(
        turn.transcript.state, metadata=dict(turn.metadata), title="", label=turn.view.label
    )
    data, metadata = turn.bundle
    try:
        if turn.publish is not None:
            turn.publish(data, metadata)
        else:
            if turn.background is not None:
                turn.background.remember(turn.display_id, turn.bundle)
            _update(data, metadata, turn.display_id)
    finally:
        turn.view.close_all()


def display_restored(
    updates: list[AgentSessionUpdate],
    *,
    metadata: dict[str, Any],
    meta: str | None,
    display_id: str | None = None,
    label: str | None = None,
    background: BackgroundTurns | None = None,
) -> TranscriptState:
    """Paint a transcript from journal updates as a static bundle (no widgets, no agent); with
    ``label``, the same header row as a live turn (``background``: where a placeholder's final output is
    remembered for ``wait()``)."""
    state = replace(fold_all(updates), restored=True)
    if state.status not in ("failed", "cancelled"):  # a journaled failure/cancel repaints as it ended
        state = with_status(state, "restored")
    data, md = static_bundle(state, metadata=metadata, meta=meta, title="", label=label)
    if display_id is None:
        display(data, raw=True, metadata=md, display_id=new_display_id())
    else:
        if background is not None:
            background.remember(display_id, (data, md))
        update_display(data, raw=True, metadata=md, display_id=display_id)
    return state
