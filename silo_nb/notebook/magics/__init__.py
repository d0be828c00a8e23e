"""The IPython extension: ``%silo`` and ``%%prompt``, split by job.

- ``waker``: on ipykernel ≥ 7.4 and 6.29–6.x an input transformer turns a ``%%prompt`` cell (and each
  top-level ``%silo`` line) into a top-level ``await`` of :func:`prompt_cell` / :func:`silo_line`, so the
  cell runs until the turn ends ("Run All" keeps order, clicks still arrive, the stop button cancels); a
  waker task ticks every 0.2 s meanwhile, or the interrupt is not delivered (ipykernel #881). On 6.x
  ``comm_pump`` hands the widgets' messages to the awaiting cell (7.4 does it by itself), there and in
  :func:`wait`.
- :class:`SiloMagics`: the registered magics, used for ``--bg`` and on other kernels (7.0–7.3): the cell
  returns at once and the turn streams in the background; ``await silo_nb.wait()`` waits for such turns.
- ``connections``: the per-shell state (:class:`NotebookSession`): connections by name, the most recent
  one, the restore records. ``silo``: the ``%silo`` subcommands. ``prompt``: ``%%prompt`` and the command
  palette, which send their turns through one function (``prompt.send_turn``).
- ``args``: options are declared with IPython's ``magic_arguments`` (``%silo?`` and ``%%prompt?`` show the
  generated help); errors are one ``UsageError`` line (with the agent's own words), never a traceback.
- After a kernel restart, ``%silo connect NAME`` resumes the session this notebook last used under NAME,
  and a ``%%prompt`` cell whose turn is already in the journal is repainted from it; ``--rerun`` resends.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class

from silo_nb.notebook import cell_turns as turns
from silo_nb.notebook.magics.args import expand, one_line
from silo_nb.notebook.magics.comm_pump import comms_reach_the_cell
from silo_nb.notebook.magics.connections import Connection, NotebookSession
from silo_nb.notebook.magics.prompt import run_prompt
from silo_nb.notebook.magics.silo import help_text, run_line
from silo_nb.notebook.magics.waker import can_block, transform, waker

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

__all__ = [
    "Connection",
    "NotebookSession",
    "SiloMagics",
    "load_ipython_extension",
    "prompt_cell",
    "session_of",
    "silo_line",
    "unload_ipython_extension",
    "use_session",
    "wait",
]

log = logging.getLogger("silo_nb.notebook")


_SHELL_ATTRIBUTE = "_silo_nb"  # where a shell keeps its NotebookSession (one per kernel)


def session_of(shell: InteractiveShell) -> NotebookSession:
    """The shell's silo_nb state (connections, shown widgets, the service); UsageError if not loaded."""
    state = getattr(shell, _SHELL_ATTRIBUTE, None)
    if not isinstance(state, NotebookSession):
        raise UsageError("silo_nb is not loaded — run %load_ext silo_nb first.")
    return state


def use_session(shell: InteractiveShell, session: NotebookSession | None) -> None:
    """Give the shell this state (one built on another service, say: tests, embedding) or, with None, none:
    the next ``%load_ext silo_nb`` then starts a fresh one, as a restarted kernel does."""
    setattr(shell, _SHELL_ATTRIBUTE, session)


def _session() -> NotebookSession:
    from IPython import get_ipython

    return session_of(get_ipython())


async def prompt_cell(argline: str, body: str) -> None:
    """What a transformed ``%%prompt`` cell awaits (blocking mode)."""
    session = _session()
    # IPython expands the line of its own cell magics; the transformed cell bypasses that, so do it here.
    argline = expand(argline, session.shell.user_ns)
    try:
        async with comms_reach_the_cell(session.shell):
            await run_prompt(session, argline, body, blocking=True)
    except asyncio.CancelledError:
        # ipykernel turns the interrupt of an awaiting cell into a CancelledError: the turn already says
        # "cancelled" in its output, so one line instead of a traceback through asyncio. Raising (not
        # returning) keeps the cell failed, so "Run All" stops as it does on any interrupt.
        raise UsageError("cancelled") from None  # IPython prints exactly this class as one line


async def silo_line(line: str) -> None:
    """What a transformed top-level ``%silo`` line awaits (blocking mode). The waker ticks meanwhile, so
    the stop button reaches a line that awaits the agent (a connect, a set) within a tick, as it does a
    ``%%prompt`` (ipykernel #881)."""
    session = _session()
    ticking = asyncio.get_running_loop().create_task(waker())
    try:
        async with comms_reach_the_cell(session.shell):
            await run_line(session, expand(line, session.shell.user_ns))
    except asyncio.CancelledError:
        raise UsageError("cancelled") from None  # IPython prints exactly this class as one line
    finally:
        ticking.cancel()


@magics_class
class SiloMagics(Magics):
    """Background-mode fallbacks (``--bg``, ipykernel 7.0–7.3, indented lines): they return at once."""

    @line_magic
    def silo(self, line: str) -> None:
        session = _session()
        self._schedule(session, run_line(session, line))

    @cell_magic
    def prompt(self, line: str, cell: str) -> None:
        session = _session()
        # Display now, while the cell runs: output sent after the cell ends is lost to headless runners.
        display_id = turns.show_placeholder("sending the prompt…")
        work = run_prompt(session, line, cell, blocking=False, display_id=display_id)
        self._schedule(session, work, display_id)

    # What %silo? and %%prompt? show: the help generated from the declared arguments.
    silo.__doc__ = help_text()
    prompt.__doc__ = run_prompt.__doc__

    @staticmethod
    def _schedule(session: NotebookSession, coroutine: Any, display_id: str | None = None) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            coroutine.close()
            raise UsageError("silo_nb needs a running event loop: use it in a Jupyter kernel.") from None
        task = loop.create_task(coroutine)
        session.background.track(task)

        def report(done: asyncio.Task[None]) -> None:
            error = None if done.cancelled() else done.exception()
            if error is None:
                return
            if display_id is not None:
                turns.show_error(display_id, one_line(error), session.background)
            else:
                log.warning("%%silo failed: %s", one_line(error))

        task.add_done_callback(report)


async def wait() -> None:
    """``silo_nb.wait()``: this shell's background turns end, their outputs re-published here."""
    from IPython import get_ipython

    state = getattr(get_ipython(), _SHELL_ATTRIBUTE, None)
    if isinstance(state, NotebookSession):
        async with comms_reach_the_cell(state.shell):  # a click on a background turn's button, meanwhile
            await state.background.wait()


async def promote(run: Any, cell: str, *, name: str | None = None) -> Any:
    """``silo_nb.promote``: a ``fork_grid`` cell's fork becomes this notebook's session (``promoting.py``)."""
    from IPython import get_ipython

    from silo_nb.notebook.magics.promoting import promote_cell

    shell = get_ipython()
    if shell is None:
        raise RuntimeError("silo_nb.promote works in a notebook — run it in a Jupyter kernel.")
    return await promote_cell(session_of(shell), run, cell, name=name)


def load_ipython_extension(shell: InteractiveShell) -> None:
    if getattr(shell, _SHELL_ATTRIBUTE, None) is None:
        use_session(shell, NotebookSession(shell))
    shell.register_magics(SiloMagics)
    if can_block(shell) and transform not in shell.input_transformers_cleanup:
        shell.input_transformers_cleanup.append(transform)


def unload_ipython_extension(shell: InteractiveShell) -> None:
    if transform in shell.input_transformers_cleanup:
        shell.input_transformers_cleanup.remove(transform)
