"""The scripted turns of the demo agent: what one ``session/prompt`` streams back.

- Turns are scripts driven by keywords in the prompt text (matched case-insensitively at the start of a
  word): ``edit``/``tool``, ``fix`` (fixes.py), ``plan``, ``slow``, ``fail``, ``refuse``, ``mode``, ``code``
  (the reply follows the prompt: replies.py), plus the
  slash commands ``/title``, ``/explain``, ``/plan``, ``/clear`` and ``/compact`` (methods
  ``command_<name>``; ``/compact`` sends a notice and a context compaction, ACP v1.25); with a
  client that offers them, ``run the tests``/``terminal`` (a client terminal) and ``risky`` (a question),
  client_scripts.py; ``subagent`` (a child session that looks around and reports, subagent.py).
- ``edit`` goes through the client's ``fs/*`` when offered, else really appends to ``notes.md`` in the
  session's cwd itself, once allowed (notes.py); ``look into NAME`` uses the notebook's MCP server
  (notebook_steps.py).
- Each step first pauses (``--delay``) and checks for cancellation, so ``session/cancel`` stops a turn at its
  next step (``TurnCancelled``) and the prompt answers ``{"stopReason": "cancelled"}``.
- Every update a turn sends is appended to the session's history (which ``session/load`` replays), and the
  user's prompt is recorded there as a ``user_message_chunk``.
- A script talks to the client only through a ``Peer`` (notify, request), so it knows nothing of the wire.
- Scripted content makes this module longer than the others; the logic is the small part.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from typing import Any, Final

from silo_nb_agents.demo.client_scripts import apply_notes_edit, plan_notes_edit, risky_step, run_command
from silo_nb_agents.demo.client_tools import ClientTools, Peer
from silo_nb_agents.demo.fixes import SMART_MODEL, apply_fix, fix_tokens, plan_fix
from silo_nb_agents.demo.notebook_steps import (
    add_cell,
    cell_asked,
    code_asked,
    look_into,
    looked_into,
    run_given,
)
from silo_nb_agents.demo.prompt_blocks_text import read_prompt
from silo_nb_agents.demo.replies import reply_markdown
from silo_nb_agents.demo.rpc_endpoint import INTERNAL_ERROR, JsonObject, RpcError
from silo_nb_agents.demo.session_store import MODELS, MODES, Session, Turn
from silo_nb_agents.demo.subagent import run_subagent

CONTEXT_WINDOW: Final = 200_000
SLOW_CHUNKS: Final = 40
SLOW_PAUSE: Final = float(os.environ.get("SILO_NB_DEMO_SLOW_PAUSE") or 0.1)  # tests: a turn past a timeout

AVAILABLE_COMMANDS: Final[list[JsonObject]] = [
    {"name": "explain", "description": "Explain a piece of code", "input": {"hint": "what to explain"}},
    {"name": "plan", "description": "Draft a plan"},
    {"name": "title", "description": "Rename this session", "input": {"hint": "new title"}},
    {"name": "clear", "description": "Forget the conversation", "input": None},
    {"name": "compact", "description": "Summarise the conversation to free context", "input": None},
]

PERMISSION_OPTIONS: Final[list[JsonObject]] = [
    {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
]

PLAN_STEPS: Final = (
    ("Read notes.md", "high"),
    ("Draft the change", "medium"),
    ("Summarise the result", "low"),
)


class TurnCancelled(Exception):
    """Raised inside a turn script once the client cancelled the turn."""


def split_text(text: str, parts: int) -> list[str]:
    """Split text into about ``parts`` streaming chunks, cutting after whitespace when possible."""
    size = max(1, -(-len(text) // parts))
    chunks: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        while end < len(text) and not text[end - 1].isspace() and end - start < size * 2:
            end += 1
        chunks.append(text[start:end])
        start = end
    return chunks


def has_keyword(text: str, keyword: str) -> bool:
    return re.search(r"\b" + re.escape(keyword), text) is not None


def _label(choices: tuple[tuple[str, str, str], ...], value: Any) -> str:
    return next((name for v, name, _ in choices if v == value), str(value))


class TurnScript:
    """The scripted steps of one prompt turn."""

    def __init__(
        self,
        peer: Peer,
        session: Session,
        turn: Turn,
        prompt: list[Any],
        delay: float,
        *,
        client: ClientTools | None = None,
    ) -> None:
        self.peer = peer
        self.session = session
        self.turn = turn
        self.delay = delay
        self.client = client or ClientTools()
        self.text, self.attachments = read_prompt(prompt)
        self.lowered = self.text.lower()
        self.first_prompt = session.title is None
        self.response_usage: JsonObject | None = None  # a fix turn's usage, sent in the prompt's answer

    # -- steps

    async def pause(self, seconds: float) -> None:
        """Wait between steps; raise TurnCancelled as soon as the client cancels."""
        if self.turn.cancelled.is_set():
            raise TurnCancelled
        if seconds <= 0:
            await asyncio.sleep(0)
        else:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.turn.cancelled.wait(), seconds)
        if self.turn.cancelled.is_set():
            raise TurnCancelled

    async def emit(self, update: JsonObject, pause: float | None = None) -> None:
        await self.pause(self.delay if pause is None else pause)
        self.session.history.append(update)
        await self.peer.notify("session/update", {"sessionId": self.session.session_id, "update": update})

    async def stream(
        self, kind: str, message_id: str, text: str, parts: int, pause: float | None = None
    ) -> None:
        for chunk in split_text(text, parts):
            update = {
                "sessionUpdate": kind,
                "messageId": message_id,
                "content": {"type": "text", "text": chunk},
            }
            await self.emit(update, pause)

    async def say(self, text: str, parts: int = 1) -> None:
        await self.stream("agent_message_chunk", self.session.next_id("msg"), text, parts)

    async def think(self) -> None:
        thoughts = ["Reading the prompt", " and picking what to show off."]
        if self.session.config.get("verbose"):
            thoughts.append(" Verbose is on, so here is one more thought about the demo script.")
        message_id = self.session.next_id("think")
        for thought in thoughts:
            content = {"type": "text", "text": thought}
            await self.emit(
                {"sessionUpdate": "agent_thought_chunk", "messageId": message_id, "content": content}
            )

    async def heed(self) -> None:
        """Say the input the client added to this turn (``_session/steering``), once each."""
        while self.turn.steered:
            await self.say(f"**Noted mid-turn:** {self.turn.steered.pop(0)}")

    async def finish(self, title: bool = True) -> str:
        await self.heed()
        if title and self.first_prompt:
            one_line = " ".join(self.text.split()) or "Attachments"
            self.session.title = one_line[:40]
            await self.emit({"sessionUpdate": "session_info_update", "title": self.session.title})
        before = int(self.session.used)
        spent = 1200 + 4 * len(self.text)
        await self.spend(spent)
        # The turn's tokens in the prompt's answer (ACP ``usage``): the context so far read from the cache.
        self.response_usage = {
            "totalTokens": before + spent,
            "inputTokens": spent * 3 // 4,
            "outputTokens": spent - spent * 3 // 4,
            "cachedReadTokens": before,
        }
        return "end_turn"

    async def spend(self, tokens: int) -> None:
        """Count ``tokens`` into the context and the cost, and say so (a ``usage_update``)."""
        self.session.used = min(CONTEXT_WINDOW, self.session.used + tokens)
        self.session.cost = round(self.session.cost + tokens * 15e-6, 6)
        await self.emit(
            {
                "sessionUpdate": "usage_update",
                "used": self.session.used,
                "size": CONTEXT_WINDOW,
                "cost": {"amount": self.session.cost, "currency": "USD"},
            }
        )

    # -- the script

    async def play(self) -> str:
        user_chunk = {
            "sessionUpdate": "user_message_chunk",
            "messageId": self.session.next_id("user"),
            "content": {"type": "text", "text": self.text},
        }
        self.session.history.append(user_chunk)
        stripped = self.text.strip()
        if stripped.startswith("/"):
            name, _, argument = stripped[1:].partition(" ")
            command = getattr(self, f"command_{name.lower()}", None) if name.isalpha() else None
            if command is not None:
                result: str = await command(argument.strip())
                return result
        return await self.conversation()

    async def conversation(self) -> str:
        await self.think()
        if has_keyword(self.lowered, "fail"):
            await self.say("Let me try that…")
            raise RpcError(INTERNAL_ERROR, "Internal error", {"details": "the demo agent was asked to fail"})
        if has_keyword(self.lowered, "refuse"):
            await self.say("I won't do that one: the prompt asked me to refuse.")
            return "refusal"
        if has_keyword(self.lowered, "fix"):
            return await self.fix_code()
        if has_keyword(self.lowered, "plan"):
            await self.plan()
        await self.say(self.reply_markdown(), parts=8)
        if has_keyword(self.lowered, "slow"):
            message_id = self.session.next_id("msg")
            for i in range(1, SLOW_CHUNKS + 1):
                text = "Counting slowly: 1" if i == 1 else f" {i}"
                content = {"type": "text", "text": text + ("." if i == SLOW_CHUNKS else "")}
                update = {"sessionUpdate": "agent_message_chunk", "messageId": message_id, "content": content}
                await self.emit(update, SLOW_PAUSE)
                if self.turn.steered:  # input added mid-turn: said at once, then the counting goes on
                    await self.heed()
                    message_id = self.session.next_id("msg")
        if "run the tests" in self.lowered or has_keyword(self.lowered, "terminal"):
            await run_command(self)
        if has_keyword(self.lowered, "risky"):
            await risky_step(self)
        if has_keyword(self.lowered, "subagent"):
            await run_subagent(self)
        if has_keyword(self.lowered, "edit") or has_keyword(self.lowered, "tool"):
            await self.edit_notes()
        if (code := code_asked(self.text)) is not None:
            await run_given(self, code, self.session.mcp_servers)
        elif (name := looked_into(self.text)) is not None:
            await look_into(self, name, self.session.mcp_servers)
        elif (plotted := cell_asked(self.text)) is not None:
            await add_cell(self, plotted, self.session.mcp_servers)
        return await self.finish()

    def reply_markdown(self) -> str:
        """The reply that follows the prompt (replies.py): what it understood and what it will do."""
        mode, model = self.session.config["mode"], self.session.config["model"]
        mode_line = (
            f"Current mode: `{mode}` ({_label(MODES, mode)}); "
            f"current model: `{model}` ({_label(MODELS, model)})."
        )
        prompt = self.session.system_prompt  # the client's systemPrompt (ACP v1.25), when it sent one
        if prompt is not None:
            words = " ".join(str(prompt["text"]).split())
            shown = words if len(words) <= 80 else words[:79] + "…"
            mode_line += f" System prompt ({prompt['mode']}, {len(words):,} characters): “{shown}”."
        return reply_markdown(
            self.text, attachments=self.attachments, looked_into=looked_into(self.text), mode_line=mode_line
        )

    async def plan(self) -> None:
        statuses = [["pending"] * 3]
        for done in range(3):
            statuses.append(["completed"] * done + ["in_progress"] + ["pending"] * (2 - done))
        statuses.append(["completed"] * 3)
        for row in statuses:
            entries = [
                {"content": content, "priority": priority, "status": status}
                for (content, priority), status in zip(PLAN_STEPS, row, strict=True)
            ]
            await self.emit({"sessionUpdate": "plan", "entries": entries})

    async def edit_notes(self) -> None:
        edit = await plan_notes_edit(self)
        read_id = self.session.next_id("call")
        await self.emit(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": read_id,
                "title": "Read notes.md",
                "kind": "read",
                "status": "pending",
                "locations": [{"path": edit.path, "line": 1}],
            }
        )
        await self.emit({"sessionUpdate": "tool_call_update", "toolCallId": read_id, "status": "in_progress"})
        if edit.problem is not None:
            await self.emit(self._tool_end(read_id, "failed", edit.problem))
            await self.say(f"I could not edit notes.md: {edit.problem}.")
            return
        found = edit.old_text if edit.old_text is not None else "(notes.md does not exist yet)"
        await self.emit(self._tool_end(read_id, "completed", found))
        edit_id = self.session.next_id("call")
        diff: JsonObject = {"type": "diff", "path": edit.path, "newText": edit.new_text}
        if edit.old_text is not None:
            diff["oldText"] = edit.old_text
        tool_call: JsonObject = {
            "toolCallId": edit_id,
            "title": "Edit notes.md",
            "kind": "edit",
            "status": "pending",
            "content": [diff],
        }
        await self.emit({"sessionUpdate": "tool_call", **tool_call})
        await self.pause(self.delay)
        if not await self.permission(tool_call):
            await self.emit({"sessionUpdate": "tool_call_update", "toolCallId": edit_id, "status": "failed"})
            await self.say("Left notes.md unchanged.")
            return
        failure = await apply_notes_edit(self, edit)  # only now, once allowed: the permission has an effect
        if failure is not None:
            await self.emit(self._tool_end(edit_id, "failed", failure))
            await self.say(f"Left notes.md unchanged: {failure}.")
            return
        await self.emit({"sessionUpdate": "tool_call_update", "toolCallId": edit_id, "status": "completed"})
        await self.say("Edited notes.md.")

    async def fix_code(self) -> str:
        """The ``fix`` turn (fixes.py): read the file, ask to edit it, write the model's version."""
        model = str(self.session.config.get("model"))
        if model == SMART_MODEL:  # considered at length
            thought = "Reading the whole file first, then the edge cases: empty, even, ties, n - 1."
            await self.stream("agent_thought_chunk", self.session.next_id("think"), thought, 3)
        plan = plan_fix(self.session.cwd, self.text, model)
        read_id = self.session.next_id("call")
        name = plan.path.rsplit("/", 1)[-1]
        read = {"toolCallId": read_id, "title": f"Read {name}", "kind": "read", "status": "pending"}
        await self.emit({"sessionUpdate": "tool_call", **read, "locations": [{"path": plan.path}]})
        if plan.problem is not None or plan.old_text is None:
            await self.emit(self._tool_end(read_id, "failed", plan.problem or "unreadable"))
            await self.say(f"I could not fix it: {plan.problem}.")
            return await self.finish()
        await self.emit(self._tool_end(read_id, "completed", plan.old_text))
        await self.spend(fix_tokens(model, "read"))
        edit_id = self.session.next_id("call")
        diff: JsonObject = {
            "type": "diff",
            "path": plan.path,
            "oldText": plan.old_text,
            "newText": plan.new_text,
        }
        tool_call: JsonObject = {
            "toolCallId": edit_id,
            "title": f"Fix {plan.function} in {name}",
            "kind": "edit",
            "status": "pending",
            "content": [diff],
        }
        await self.emit({"sessionUpdate": "tool_call", **tool_call})
        if not await self.permission(tool_call):
            await self.emit({"sessionUpdate": "tool_call_update", "toolCallId": edit_id, "status": "failed"})
            await self.say(f"Left {name} unchanged.")
            return await self.finish()
        failure = apply_fix(plan)
        status = "failed" if failure else "completed"
        await self.emit({"sessionUpdate": "tool_call_update", "toolCallId": edit_id, "status": status})
        await self.spend(fix_tokens(model, "edit"))
        await self.say(
            f"Left {name} unchanged: {failure}." if failure else f"Rewrote `{plan.function}`: done."
        )
        stop_reason = await self.finish()
        used = int(self.session.used)
        self.response_usage = {
            "totalTokens": used,
            "inputTokens": used * 3 // 4,
            "outputTokens": used - used * 3 // 4,
        }
        return stop_reason

    @staticmethod
    def _tool_end(call_id: str, status: str, text: str) -> JsonObject:
        content = {"type": "content", "content": {"type": "text", "text": text}}
        return {
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "status": status,
            "content": [content],
        }

    async def permission(self, tool_call: JsonObject, *, session_id: str | None = None) -> bool:
        """Ask the client; True when it picked an allow option, TurnCancelled when the turn was cancelled.
        ``session_id``: a subagent's, asking under its own id."""
        request = {
            "sessionId": session_id or self.session.session_id,
            "toolCall": tool_call,
            "options": PERMISSION_OPTIONS,
        }
        answer = await self.peer.request("session/request_permission", request)
        waiter = asyncio.ensure_future(self.turn.cancelled.wait())
        either: list[asyncio.Future[Any]] = [answer, waiter]
        try:
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        # On cancellation stop waiting; the client still answers the request, which is then dropped.
        if self.turn.cancelled.is_set():
            raise TurnCancelled
        response = answer.result()
        result = response.get("result")
        outcome = result.get("outcome") if isinstance(result, dict) else None
        kind = outcome.get("outcome") if isinstance(outcome, dict) else None
        option_id = outcome.get("optionId") if isinstance(outcome, dict) else None
        if kind == "cancelled":
            raise TurnCancelled
        return kind == "selected" and isinstance(option_id, str) and option_id.startswith("allow")

    # -- slash commands (looked up as command_<name>)

    async def command_title(self, argument: str) -> str:
        if not argument:
            await self.say("Usage: `/title NEW TITLE`")
            return await self.finish()
        self.session.title = argument
        await self.emit({"sessionUpdate": "session_info_update", "title": argument})
        await self.say("Renamed.")
        return await self.finish(title=False)

    async def command_explain(self, argument: str) -> str:
        await self.think()
        subject = argument or "the code"
        text = (
            f"### Explaining {subject}\n\n"
            "- **What it does:** greets someone by name.\n"
            "- **How:** an f-string builds the message.\n\n"
            '```python\ndef greet(name: str) -> str:\n    return f"Hello, {name}!"\n```\n'
        )
        await self.say(text, parts=6)
        return await self.finish()

    async def command_plan(self, argument: str) -> str:
        await self.think()
        await self.plan()
        await self.say(
            f"**Plan drafted**{': ' + argument if argument else '.'}\n\n- Three steps, all done.\n", 3
        )
        return await self.finish()

    async def command_compact(self, argument: str) -> str:
        """Summarise the conversation so far (ACP v1.25 compaction to a client that takes it; a notice
        says what it means; older clients get the same as plain messages)."""
        asked = [
            u["content"]["text"]
            for u in self.session.history
            if u.get("sessionUpdate") == "user_message_chunk"
        ]
        summary = (
            f"The user asked {len(asked) - 1} thing(s) before this; the last: {asked[-2]!r}."
            if len(asked) > 1
            else "Nothing to keep yet."
        )
        title = "Compacting the conversation"
        description = "Earlier turns become a short summary: details the summary leaves out are forgotten."
        if self.client.notices:
            await self.emit(
                {"sessionUpdate": "notice", "severity": "info", "title": title, "description": description}
            )
        else:
            await self.say(f"**{title}:** {description}")
        compaction_id = self.session.next_id("compaction")
        if self.client.compaction:
            await self.emit(
                {"sessionUpdate": "compaction_update", "compactionId": compaction_id, "status": "in_progress"}
            )
            for chunk in split_text(summary, 3):
                await self.emit(
                    {
                        "sessionUpdate": "compaction_summary_chunk",
                        "compactionId": compaction_id,
                        "content": {"type": "text", "text": chunk},
                    }
                )
            await self.emit(
                {"sessionUpdate": "compaction_update", "compactionId": compaction_id, "status": "completed"}
            )
        else:
            await self.say(f"Context compacted. Summary: {summary}")
        self.session.used = 400 + 4 * len(summary)
        await self.spend(0)
        return "end_turn"

    async def command_clear(self, argument: str) -> str:
        await self.say("Cleared.")
        self.session.used = 0
        await self.emit(
            {
                "sessionUpdate": "usage_update",
                "used": 0,
                "size": CONTEXT_WINDOW,
                "cost": {"amount": self.session.cost, "currency": "USD"},
            }
        )
        self.session.history.clear()
        return "end_turn"
