"""Stale answers in the notebook (issue 32, step 3): after each user cell, which turns' answers are based on
a variable or a cell that changed since, shown as a **stale** badge under the turn, with **Re-ask**.

- One :class:`StaleWatch` per connection, made when it connects (``connecting._open``) and closed with it
  (``NotebookSession.drop``; or at the first cell after its session was disposed). It watches with the
  connection's kernel tools' tracker (``KernelToolServer.stale_answers``: what the agent's tools read), or a
  tracker of its own where the connection has no kernel tools (``--attach`` and ``@name`` still count).
- An IPython ``post_run_cell`` hook: the cell that ran (its id, source and execution count, where the
  frontend sent the id) then the check, bounded to a few ms (``kernel_tools.stale_answers``); it never
  raises into the user's cell.
- :meth:`StaleWatch.offer_badge` (a blocking ``%%prompt``'s end): the turn's ``--attach`` names and
  ``@name`` references are watched from its end, and where the turn read anything a hidden
  :class:`~silo_nb.notebook.widgets.stale_badge.StaleBadge` goes under it, shown once the check finds it
  stale.
- **Re-ask** sends the prompt's text again, its ``--attach`` and ``@`` references read anew (not its
  ``--file`` or ``--error``): on a fork of the session where the agent forks (a new connection
  ``NAME_reaskN`` with kernel tools of its own; the default connection stays as it was), else in the same
  session, saying so; the turn's transcript goes into the badge's output.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from silo_nb.kernel_tools import StaleAnswers
from silo_nb.model import AgentSessionError
from silo_nb.notebook.attachments import attachment_blocks
from silo_nb.notebook.magics.kernel_tool_setup import kernel_namespace
from silo_nb.notebook.magics.prompt import send_turn
from silo_nb.notebook.references import reference_blocks, variable_references
from silo_nb.notebook.widgets.stale_badge import StaleBadge

if TYPE_CHECKING:
    from silo_nb.notebook.cell_turns import Turn
    from silo_nb.notebook.magics.connections import Connection, NotebookSession
    from silo_nb.sessions import AgentSessionHandle

__all__ = ["StaleWatch"]

log = logging.getLogger("silo_nb.notebook")

HOOK = "post_run_cell"


class StaleWatch:
    """One connection's stale answers (see the module docstring)."""

    def __init__(
        self,
        session: NotebookSession,
        connection: Connection,
        handle: AgentSessionHandle,
        *,
        fork: Callable[[str], Awaitable[Connection]] | None = None,
    ) -> None:
        self.session, self.connection, self.handle, self.fork = session, connection, handle, fork
        tools = connection.kernel_tools
        self.stale = (
            tools.stale_answers if tools is not None else StaleAnswers(kernel_namespace(session.shell))
        )
        self.badges: weakref.WeakValueDictionary[int, StaleBadge] = weakref.WeakValueDictionary()
        self.closed = False
        self._watching = self.stale.watch(handle)
        session.shell.events.register(HOOK, self.post_run_cell)

    def close(self) -> None:
        """Stop watching (idempotent): the hook is unregistered, the session let go."""
        if self.closed:
            return
        self.closed = True
        self._watching.dispose()
        with contextlib.suppress(ValueError):  # not registered (any more)
            self.session.shell.events.unregister(HOOK, self.post_run_cell)

    def post_run_cell(self, result: Any) -> None:
        """After each cell: note the cell, check, show the badges of turns gone stale. Never raises."""
        try:
            if self.handle.disposed:
                self.close()
                return
            info = getattr(result, "info", None)
            cell_id, source = getattr(info, "cell_id", None), getattr(info, "raw_cell", None)
            count = getattr(result, "execution_count", None)
            source = source if isinstance(source, str) else ""
            self.stale.cell_ran(cell_id if isinstance(cell_id, str) else None, source, count)
            for turn in self.stale.check(source):
                badge = self.badges.get(turn.turn)
                if badge is not None:
                    badge.mark_stale(turn.changed)
                    self.session.shown.refresh(badge)
        except (Exception, KeyboardInterrupt):  # the user's cell is done: nothing of ours goes into it
            log.exception("the stale-answer check after a cell failed")

    def offer_badge(self, turn: Turn, text: str, attach: Sequence[str]) -> None:
        """A blocking ``%%prompt`` turn ended: watch what it was sent, and put its (hidden) badge under it
        when it read anything."""
        if turn.handle is not self.handle or self.closed:
            return
        number = self.handle.current_turn
        names = [*variable_references(text, self.session.shell.user_ns), *(n.split(".")[0] for n in attach)]
        self.stale.note_values(number, names)
        if not self.stale.read_by(number):
            return

        def reask(badge: StaleBadge) -> Awaitable[str]:
            return self.reask(badge, text, attach)

        badge = StaleBadge(number, reask=reask, forks=self.handle.can_fork and self.fork is not None)
        self.badges[number] = badge
        self.session.shown.show(badge)

    async def reask(self, badge: StaleBadge, text: str, attach: Sequence[str]) -> str:
        """Send the prompt again (see the module docstring); the line that says where it went. The turn
        runs in the background (``silo_nb.wait()`` waits for it), shown in ``badge.output``."""
        session, connection, handle = self.session, self.connection, self.handle
        if handle.can_fork and self.fork is not None:
            name = self._fork_name(badge.turn)
            default = session.last_name
            target = await self.fork(name)
            if default in session.connections:  # the fork is no new default for %%prompt
                session.last_name = default
            said = f"Re-asked on a fork of {connection.name}, as the connection {name}."
        else:
            target = connection
            said = (
                f"{handle.label} does not fork sessions (no session/fork): re-asked in the same session, "
                "which still remembers its earlier answer."
            )
        forked = target.handle
        if forked is None:
            raise AgentSessionError(f"{target.name} is not connected.")
        caps, shell = forked.prompt_capabilities, session.shell
        extra = attachment_blocks(
            list(attach),
            shell.user_ns,
            embedded=caps.embedded_context,
            workspace=session.service.workspace_folder,
            session_id=forked.session_id,
            images=caps.image,
        )
        extra += reference_blocks(text, shell.user_ns, embedded=caps.embedded_context, images=caps.image)
        metadata = {"session_id": forked.session_id, "profile_id": target.profile_id, "name": target.name}
        drive = send_turn(
            session, target, forked, text, extra, metadata=metadata, background=True, output=badge.output
        )
        session.background.track(asyncio.get_running_loop().create_task(drive))
        return said

    def _fork_name(self, turn: int) -> str:
        base = f"{self.connection.name}_reask{turn}"
        name, n = base, 1
        while name in self.session.connections:
            n += 1
            name = f"{base}_{n}"
        return name
