"""The demo agent's turns that use the client's offer (``client_tools.py``): the notes edit through
``fs/*`` (or directly, without it), a command in a client terminal (``run the tests``, ``terminal``) and a
question before a risky step (``risky``). Functions of the turn script they belong to
(``scripted_turns.TurnScript``), which they reach through :class:`Script`."""

from __future__ import annotations

import os
from typing import Protocol

from silo_nb_agents.demo.client_tools import ClientTools, Peer
from silo_nb_agents.demo.notes import NOTES_FILE, NotesEdit, apply_edit, edit_from, plan_edit
from silo_nb_agents.demo.rpc_endpoint import JsonObject
from silo_nb_agents.demo.session_store import Session

__all__ = ["Script", "apply_notes_edit", "plan_notes_edit", "risky_step", "run_command"]


class Script(Protocol):
    """What these steps need of a turn script."""

    peer: Peer
    session: Session
    client: ClientTools
    text: str

    async def emit(self, update: JsonObject, pause: float | None = None) -> None: ...

    async def say(self, text: str, parts: int = 1) -> None: ...


async def plan_notes_edit(self: Script) -> NotesEdit:
    """The edit to propose: ``notes.md`` read through the client when it offers that, else directly."""
    if not self.client.fs_read:
        return plan_edit(self.session.cwd, self.text)
    path = os.path.join(self.session.cwd, NOTES_FILE)
    text, problem = await self.client.read(self.peer, self.session.session_id, path)
    return edit_from(path, text, self.text, problem)


async def apply_notes_edit(self: Script, edit: NotesEdit) -> str | None:
    """Write the allowed edit through the client when it offers that, else directly; None when written."""
    if not self.client.fs_write:
        return apply_edit(edit)
    return await self.client.write(self.peer, self.session.session_id, edit.path, edit.new_text)


async def run_command(self: Script) -> None:
    """``run the tests``/``terminal``: a command in a client terminal, shown inside its tool call."""
    if not self.client.terminal:
        await self.say("I would run the tests, but this client offers no terminal.")
        return
    code = "import platform; print('3 passed in 0.01s'); print('python', platform.python_version())"
    session_id = self.session.session_id
    terminal_id, problem = await self.client.start(self.peer, session_id, "python3", ["-c", code])
    if terminal_id is None:
        await self.say(f"I could not run the tests: {problem}.")
        return
    call_id = self.session.next_id("call")
    content = [{"type": "terminal", "terminalId": terminal_id}]
    call = {"toolCallId": call_id, "title": "Run the tests", "kind": "execute", "status": "in_progress"}
    await self.emit({"sessionUpdate": "tool_call", **call, "content": content})
    output, status = await self.client.finish(self.peer, session_id, terminal_id)
    code_ = status.get("exitCode") if isinstance(status, dict) else None
    done = "completed" if code_ == 0 else "failed"
    await self.emit({"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": done})
    await self.say(f"The tests ran: {output.splitlines()[0] if output else 'no output'}.")


async def risky_step(self: Script) -> None:
    """``risky``: ask the user first (a form question), then act on the answer."""
    if not self.client.questions:
        await self.say("This step is risky and I cannot ask you first here, so I skipped it.")
        return
    schema = {
        "type": "object",
        "properties": {
            "confirm": {"type": "boolean", "title": "Delete scratch.txt?", "default": False},
            "reason": {"type": "string", "title": "Why (optional)"},
        },
        "required": ["confirm"],
    }
    message = "Before a risky step: may I delete scratch.txt?"
    action, values = await self.client.ask(self.peer, self.session.session_id, message, schema, None)
    if action == "accept" and values.get("confirm") is True:
        reason = f" ({values['reason']})" if isinstance(values.get("reason"), str) else ""
        await self.say(f"You said yes{reason}: scratch.txt is deleted (in this demo, nothing is).")
    else:
        await self.say(f"You said no ({action}): scratch.txt stays.")
