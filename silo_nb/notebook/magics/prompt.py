"""``%%prompt`` and the command palette: both send a turn through :func:`send_turn`.

- :func:`run_prompt` reads the cell: options (declared below with ``magic_arguments``), ``{var}``
  filled from the user namespace and ``--attach``/``--file`` shaped for this agent (attachments.py); the
  cell id (``cell_records.prompt_cell_key``: the execute request's, else a hash of source and run count,
  headless also of the cells run before); then the restore decision: a cell not sent in this kernel
  whose turn is already in the journal of the session it resumed (same cell, same text) is repainted
  from the journal with no agent call, unless ``--rerun``, the run samples (``sessions.sampling``)
  or the session is new in this kernel (``--new``, ``--fresh``).
- :func:`send_turn` is the one path that builds the prompt blocks, starts the turn (the live turn view is
  shown synchronously, so it lands in the running cell) and returns the coroutine that drives it: a
  blocking turn marks its session witnessed; every turn runs the waker while it lasts.
- The palette (:func:`palette_run`, the session panel's ``on_run``) sends through the same function; only
  the destination differs: the turn view goes into the ``Output`` under the panel, and the final HTML
  replaces it there, instead of the cell output under a ``display_id``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from silo_nb.model import UndoItem
from silo_nb.notebook import cell_turns as turns
from silo_nb.notebook.attachments import attachment_blocks, file_blocks, interpolate
from silo_nb.notebook.cell_records import prompt_cell_key
from silo_nb.notebook.last_error import last_traceback
from silo_nb.notebook.magics.args import argument, magic_arguments, one_line, parse, split
from silo_nb.notebook.magics.kernel_tool_setup import notebook_cell_id
from silo_nb.notebook.magics.undo_turn import offer_undo_turn_row
from silo_nb.notebook.magics.waker import waker
from silo_nb.notebook.references import cell_above, error_cell, reference_blocks
from silo_nb.notebook.widgets.undo_turn_row import undone_text
from silo_nb.sessions import sampling_asked

if TYPE_CHECKING:
    from silo_nb.model import (
        AgentSessionUpdate,
    )
    from silo_nb.notebook.magics.connections import Connection, NotebookSession
    from silo_nb.sessions import (
        AgentSessionHandle,
    )

__all__ = ["palette_run", "run_prompt", "send_turn"]

LAST_ERROR = "last_error"  # what an attached traceback is called (in the prompt and the journal)


@magic_arguments("%prompt")  # the prog: IPython prefixes "%", so the help reads "%%prompt ..."
@argument("name", nargs="?", metavar="NAME", help="the connection to send to (default: the most recent one)")
@argument("--bg", action="store_true", help="return at once; the turn keeps streaming in the background")
@argument("--rerun", action="store_true", help="send it again even if this cell's turn is in the journal")
@argument("--attach", nargs="+", default=[], metavar="VAR", help="variables to attach (a DataFrame as CSV)")
@argument("--file", nargs="+", default=[], metavar="PATH", help="files to attach")
@argument("--error", action="store_true", help="attach the last error of this kernel (its traceback)")
async def run_prompt(
    session: NotebookSession, argline: str, body: str, *, blocking: bool, display_id: str | None = None
) -> None:
    """Send the cell as one turn and show the turn view in the cell output.

    {var} in the cell is filled from your variables (unknown names are left as is), {In[3]} and
    {Out[5]} from the cells' inputs and outputs; --error attaches the last traceback of this kernel; a
    cell that starts with / runs an agent command. After a kernel restart, a cell whose turn is already
    in the journal (same cell, same text) is repainted from the journal with no agent call, marked
    "restored".
    """
    # blocking: the cell awaits this (a transformed cell). display_id: a placeholder the (background)
    # cell already displayed, which the turn view replaces.
    args = parse(run_prompt, split(argline, "%%prompt"))
    connection, handle = await session.handle(args.name)
    shell, workspace = session.shell, session.service.workspace_folder
    prompt_cell = notebook_cell_id(shell)
    if connection.kernel_tools is not None:
        connection.kernel_tools.prompt_at(prompt_cell)
    text = interpolate(body.rstrip("\n"), shell.user_ns)
    embedded, images = handle.prompt_capabilities.embedded_context, handle.prompt_capabilities.image
    namespace: Any = shell.user_ns
    attach = list(args.attach)
    also: tuple[str, ...] = ()  # references the prompt does not write: the cell that raised, for --error
    if args.error:
        error = last_traceback()
        if error is None:
            raise UsageError("%%prompt --error: there is no error in this kernel yet to attach.")
        namespace, attach = {**shell.user_ns, LAST_ERROR: error}, [*attach, LAST_ERROR]
        also = tuple(cell for cell in [error_cell(error)] if cell)
    try:
        extra = attachment_blocks(
            attach,
            namespace,
            embedded=embedded,
            workspace=workspace,
            session_id=handle.session_id,
            images=images,
        )
        extra += file_blocks(args.file, embedded=embedded, workspace=workspace, images=images)
        this = await cell_above(prompt_cell) if "@this" in text else None
        extra += reference_blocks(
            text, shell.user_ns, embedded=embedded, images=images, this_source=this, also=also
        )
    except ValueError as exc:
        raise UsageError(one_line(exc)) from None
    if not text.strip() and not extra:
        raise UsageError("%%prompt: the cell is empty — write the prompt on the lines below %%prompt.")
    try:
        sample = sampling_asked(shell.user_ns)
    except ValueError as exc:
        raise UsageError(f"%%prompt: {exc}") from None
    session.prompt_runs += 1
    cell_id = prompt_cell_key(shell, f"{argline}\n{body}", session.prompt_runs, session.run_digest)
    metadata: dict[str, Any] = {
        "session_id": handle.session_id,
        "profile_id": connection.profile_id,
        "cell_id": cell_id,
        "name": connection.name,
    }
    # Restored only from a session this kernel resumed: one it opened (--new, --fresh carrying the old
    # transcript, a sample) is asked every prompt, so each run of a sampling notebook is a real turn.
    resumed = handle.resume_outcome != "new"
    if resumed and not (args.rerun or sample) and cell_id not in session.sent_cells:
        earlier = await _turn_in_journal(session, handle, cell_id, text)
        if earlier is not None:
            turns.display_restored(
                earlier,
                display_id=display_id,
                background=session.background,
                metadata={**metadata, "restored": True},
                # The header's "↺ restored" badge says it was restored; a turn undone since says so.
                meta=_undone_note(session, handle, cell_id, text),
                label=handle.agent_name,
            )
            return
    if handle.resume_outcome == "journal-only":
        raise UsageError(
            f"{handle.label} is journal-only — run %silo connect {connection.profile_id} --as "
            f"{connection.name} --fresh to continue in a new session."
        )
    session.sent_cells.add(cell_id)
    background = args.bg or not blocking

    def ended(turn: turns.Turn) -> None:
        offer_undo_turn_row(session, connection.name, turn.handle, turn.handle.current_turn, turn.view.state)
        if connection.stale is not None:  # issue 32: the stale badge, hidden until what it read changes
            connection.stale.offer_badge(turn, text, args.attach)

    drive = send_turn(
        session,
        connection,
        handle,
        text,
        extra,
        on_end=None if background else ended,
        metadata=metadata,
        background=background,
        display_id=display_id,
    )
    if background and blocking:
        # A blocking cell asked for --bg (e.g. as "--b"): the cell returns, the turn goes on.
        session.background.track(asyncio.get_running_loop().create_task(drive))
        return
    await drive  # blocking; or, when not blocking, this already is a background task (SiloMagics.prompt)


def send_turn(
    session: NotebookSession,
    connection: Connection,
    handle: AgentSessionHandle,
    text: str,
    extra: Sequence[Any] = (),
    *,
    metadata: dict[str, Any],
    background: bool,
    display_id: str | None = None,
    output: Any = None,
    on_end: Callable[[turns.Turn], None] | None = None,
) -> Coroutine[Any, Any, None]:
    """Build the prompt blocks and show the live turn view now; return the coroutine driving the turn.

    ``extra``: blocks already shaped for this agent (attachments). The view is shown in the running cell
    (replacing ``display_id`` if given), or, with ``output`` (an ``ipywidgets.Output``), in that widget,
    where the final HTML then replaces it. Await the result, or schedule it on ``session.background``.
    ``on_end(turn)`` runs once the turn's static bundle is in place.
    """
    blocks: list[Any] = ([{"type": "text", "text": text}] if text.strip() else []) + list(extra)
    turn = turns.start_turn(
        handle,
        blocks,
        metadata=metadata,
        panel=connection.panel,
        background=session.background if background else None,
        display_id=display_id,
        output=output,
    )
    return _drive(session, turn, on_end)


async def _drive(
    session: NotebookSession, turn: turns.Turn, on_end: Callable[[turns.Turn], None] | None
) -> None:
    if turn.background is None:
        session.blocking_sessions.add(turn.handle.id)
    # Blocking: the stop button is noticed (ipykernel issue 881). In the background too: the turn goes on
    # while the kernel is idle even if a wake-up of the kernel's loop is lost (issue 21, item 9).
    ticking = asyncio.get_running_loop().create_task(waker())
    try:
        await turns.run_turn(turn)
    finally:
        ticking.cancel()
        if turn.background is None:
            session.blocking_sessions.discard(turn.handle.id)
        if on_end is not None:
            on_end(turn)
        # Each turn's end: every live panel and agents list re-sends its bundle, so the saved notebook
        # holds their state after this turn (status, title, controls, the palette's turns).
        session.shown.refresh_all()


def palette_run(session: NotebookSession, connection: Connection, text: str) -> None:
    """A command from the session panel's palette: a background turn shown under the panel."""
    handle, output, box = connection.handle, connection.output, connection.box
    if handle is None or output is None:
        return

    def keep(turn: turns.Turn) -> None:
        if turn.bundle is not None and box is not None:
            box.add_turn(turn.bundle[0])

    drive = send_turn(
        session,
        connection,
        handle,
        text,
        metadata=_metadata(connection, handle),
        background=True,
        output=output,
        on_end=keep,
    )
    session.background.track(asyncio.get_running_loop().create_task(drive))


def _metadata(connection: Connection, handle: AgentSessionHandle) -> dict[str, Any]:
    return {"session_id": handle.session_id, "profile_id": connection.profile_id, "name": connection.name}


def _undone_note(session: NotebookSession, handle: AgentSessionHandle, cell_id: str, text: str) -> str | None:
    """ "↶ Undone …" for a restored turn an undo took back (its journal says so), else None."""
    path = session.service.sessions.journals.path(handle.workspace_id, handle.session_id)
    found = session.journal_index.undone_turn(path, cell_id, text)
    if found is None:
        return None
    number, line = found
    return undone_text(number, [item for raw in line.items if (item := UndoItem.read(raw)) is not None])


async def _turn_in_journal(
    session: NotebookSession, handle: AgentSessionHandle, cell_id: str, text: str
) -> list[AgentSessionUpdate] | None:
    """The last turn of this session's journal sent from ``cell_id`` with this very text, if any
    (the journal is indexed once per kernel, then only what was appended: ``journal_index``)."""
    if not handle.session_id:
        return None
    journals = session.service.sessions.journals
    path = journals.path(handle.workspace_id, handle.session_id)
    return session.journal_index.find_turn(journals, path, cell_id, text)
