"""``python -m silo_nb demo``: one whole turn against an agent profile, printed in a terminal.

It uses only the public API (``AgentsService`` → ``connect`` → ``prompt``) and shows what a client sees:
streamed text, thoughts, tool calls with diffs, the plan, a permission request (answered from the
terminal, or by ``--allow``/``--reject``), usage and the title. Defaults to the built-in ``demo`` agent,
so it needs no keys and no network. This is a script entry point, so it owns its event loop.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

import anyio

from silo_nb.model import (
    AgentPermissionRequest,
    AgentSessionError,
    AgentSessionUpdate,
)
from silo_nb.sessions import (
    AgentsService,
)

__all__ = ["main"]

DEFAULT_PROMPT = "Please make a plan, then edit notes.md"


class TerminalView:
    """Prints updates as they stream; text chunks of one message stay on one line."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._open_kind: str | None = None

    def _start(self, kind: str, header: str) -> None:
        if self._open_kind != kind:
            self._end()
            self.out.write(header)
            self._open_kind = kind

    def _end(self) -> None:
        if self._open_kind is not None:
            self.out.write("\n")
            self._open_kind = None

    def show(self, update: AgentSessionUpdate) -> None:
        child = update.child_session_id  # a subagent's (ACP v1.25): its lines say whose they are
        who = f"subagent {child[:40]}" if child else "agent"
        if update.kind == "subagent_update":
            self._end()
            raw = update.raw
            state = raw["state"] if isinstance(raw.get("state"), dict) else {}
            parts = [str(part) for part in (raw.get("title"), state.get("state")) if part]
            self.out.write(f"  [subagent {str(raw.get('sessionId'))[:40]}] {' · '.join(parts)}\n")
        elif update.kind == "session_message" and isinstance(update.raw.get("content"), list):
            self._end()
            texts = [b.get("text", "") for b in update.raw["content"] if isinstance(b, dict)]
            self.out.write(f"  [message] {''.join(str(t) for t in texts)}\n")
        elif update.kind == "agent_message_chunk" and update.text:
            self._start(f"text {who}", f"\n{who}> ")
            self.out.write(update.text)
        elif update.kind == "agent_thought_chunk" and update.text:
            self._start(f"thought {who}", f"\n({who} thinking) " if child else "\n(thinking) ")
            self.out.write(update.text)
        elif update.tool_call is not None:
            self._end()
            call = update.tool_call
            parts = [p for p in (call.kind, call.title, call.status) if p]
            self.out.write(f"  [tool {call.tool_call_id}] {' · '.join(parts)}\n")
            for content in call.content or ():
                if content.type == "diff":
                    self.out.write(f"    diff {content.path}\n")
                    for line in (content.old_text or "").splitlines():
                        self.out.write(f"    - {line}\n")
                    for line in (content.new_text or "").splitlines():
                        self.out.write(f"    + {line}\n")
        elif update.plan is not None:
            self._end()
            marks = {"completed": "[x]", "in_progress": "[~]"}
            self.out.write("  plan:\n")
            for entry in update.plan:
                self.out.write(f"    {marks.get(entry.status or '', '[ ]')} {entry.content}\n")
        elif update.usage is not None:
            self._end()
            cost = (
                f", {update.usage.cost.amount:.4f} {update.usage.cost.currency}" if update.usage.cost else ""
            )
            self.out.write(f"  usage: {update.usage.used:,.0f} / {update.usage.size:,.0f} tokens{cost}\n")
        elif update.kind == "session_info_update":
            self._end()
            self.out.write(f"  title: {update.raw.get('title')}\n")
        self.out.flush()

    def finish(self) -> None:
        self._end()


async def run(profile_id: str, prompt: str, answer: str | None, out: TextIO) -> int:
    service = AgentsService()
    view = TerminalView(out)
    try:
        handle = await service.sessions.connect(profile_id)
    except AgentSessionError as exc:
        out.write(f"error: {exc}\n")
        return 1

    def on_permission(request: AgentPermissionRequest) -> None:
        view.finish()
        out.write(f"  permission: {request.title}\n")
        for index, option in enumerate(request.options, 1):
            out.write(f"    {index}. {option.name} ({option.kind})\n")
        wanted = answer or "allow"
        chosen = next((o for o in request.options if o.kind.startswith(wanted)), request.options[0])
        out.write(f"  → {chosen.name}\n")
        request.respond(chosen.option_id)

    async with handle:
        out.write(f"connected to {handle.agent_name} (session {handle.session_id})\n")
        out.write(f"options: {', '.join(f'{o.name}={o.current_value}' for o in handle.config_options)}\n")
        handle.on_update(view.show)
        handle.on_permission(on_permission)
        out.write(f"\nyou> {prompt}\n")
        try:
            result = await handle.prompt([{"type": "text", "text": prompt}])
        except AgentSessionError as exc:
            view.finish()
            out.write(f"error: {exc}\n")
            return 1
        view.finish()
        out.write(f"\nturn ended: {result.stop_reason}\n")
        journal = await service.sessions.read_journal(handle.session_id)
        out.write(f"journal: {len(journal)} updates on disk\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m silo_nb demo", description=__doc__.splitlines()[0])
    parser.add_argument("prompt", nargs="?", default=DEFAULT_PROMPT)
    parser.add_argument("--profile", default="demo", help="agent profile id (default: the built-in demo)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--allow", dest="answer", action="store_const", const="allow", help="allow permissions"
    )
    group.add_argument("--reject", dest="answer", action="store_const", const="reject", help="reject them")
    args = parser.parse_args(argv)
    try:
        code: int = anyio.run(run, args.profile, args.prompt, args.answer, sys.stdout)
    except KeyboardInterrupt:  # a deliberate stop: the agent's process group is gone with the session
        sys.stderr.write("stopped (Ctrl-C)\n")
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
