"""Tools silo_nb runs for the agent itself, inside a turn (the kernel tools' MCP server, ``kernel_tools/``),
recorded in the session's transcript like the agent's own work.

- A call is journaled as ``kernel_tool`` lines (``kinds.py``), upserted by ``callId`` (unique within the
  session): a ``waiting`` line when a call that asks first starts (the user has not answered yet), a
  ``running`` line once it is allowed, then one line with how it ended
  (``completed``, ``error``, ``failed``, ``refused``, ``interrupted``, ``timed_out``), its output and images.
- Only while a prompt of this session is in flight: a call outside a running turn is refused
  (``AgentSessionError``, one line) and nothing is recorded — an agent working on its own, between turns,
  has no user watching.
- A call that needs the user's consent asks through the session's permission desk
  (``PermissionDesk.ask_for_client``): the same listeners, policies, buttons and journal lines as an agent's
  request, the tool call's ``toolCallId`` being the call's id.
- Bounded: string arguments keep :data:`ARGUMENT_CHARS`, the output :data:`OUTPUT_CHARS`, at most
  :data:`MAX_IMAGES` images of at most :data:`IMAGE_CHARS` base64 characters each (others are counted).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from silo_nb.model import (
    AgentSessionError,
    AgentSessionUpdate,
    KernelToolLine,
)
from silo_nb.sessions.session.permission_desk import PermissionDesk

__all__ = [
    "ARGUMENT_CHARS",
    "FINAL_STATUSES",
    "IMAGE_CHARS",
    "MAX_IMAGES",
    "OUTPUT_CHARS",
    "ClientToolCall",
    "ClientToolCalls",
]

ARGUMENT_CHARS = 100_000
OUTPUT_CHARS = 20_000
IMAGE_CHARS = 400_000
MAX_IMAGES = 4
CELL_SOURCE_CHARS = 200_000  # a notebook cell's source before and after a cell tool changed it
FINAL_STATUSES = frozenset({"completed", "error", "failed", "refused", "interrupted", "timed_out"})
OUTSIDE_A_TURN = (
    "The notebook's tools answer only while a turn of this session runs (a %%prompt cell, or prompt()); "
    "this call came outside one and was refused."
)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… [cut by silo_nb: {len(text) - limit:,} more]"


def _bounded_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, value in list(arguments.items())[:16]:
        if isinstance(value, str):
            kept[str(key)[:80]] = _cut(value, ARGUMENT_CHARS)
        elif isinstance(value, bool | int | float) or value is None:
            kept[str(key)[:80]] = value
        else:
            kept[str(key)[:80]] = _cut(repr(value), 200)
    return kept


class ClientToolCall:
    """One call in flight: ask the user (:meth:`ask`), then :meth:`finish` it once."""

    def __init__(self, owner: ClientToolCalls, call_id: str, tool: str, arguments: dict[str, Any]) -> None:
        self._owner = owner
        self.call_id = call_id
        self.tool = tool
        self.arguments = arguments
        self.finished = False

    def waiting(self, title: str, *, cell: Mapping[str, Any] | None = None) -> None:
        """Record that the call waits for the user's answer (its card shows before the permission row;
        ``cell``: the notebook cell change it proposes, shown as its diff)."""
        self._owner.record_line(self, "waiting", title=title, cell=cell)

    def running(self, title: str) -> None:
        """Record that the call started (allowed, or one that asks nothing)."""
        self._owner.record_line(self, "running", title=title)

    async def ask(
        self,
        *,
        title: str,
        kind: str,
        raw_input: Mapping[str, Any],
        options: Sequence[Mapping[str, Any]],
        content: Sequence[Mapping[str, Any]] = (),
    ) -> str | None:
        """Ask the user through the session's permission flow: the chosen option id, None when nobody
        allowed it (rejected, cancelled, no listener). The tool call's ``kind`` is what policies match
        (``code`` for ``run_code``); ``content``: the tool call's content (a cell's diff)."""
        tool_call: dict[str, Any] = {
            "toolCallId": self.call_id,
            "title": title,
            "kind": kind,
            "status": "pending",
            "rawInput": dict(raw_input),
        }
        if content:
            tool_call["content"] = [dict(block) for block in content]
        return await self._owner.ask(tool_call, options)

    def finish(
        self,
        status: str,
        *,
        output: str = "",
        images: Sequence[str] = (),
        title: str | None = None,
        cell: Mapping[str, Any] | None = None,
    ) -> None:
        """Record how the call ended (``images``: base64 PNGs for the transcript; ``cell``: the notebook
        cell a cell tool touched, ``cellId`` and its ``oldSource``/``newSource``). Once only."""
        if self.finished:
            return
        self.finished = True
        self._owner.record_line(
            self,
            status if status in FINAL_STATUSES else "failed",
            title=title,
            output=output,
            images=images,
            cell=cell,
        )


class ClientToolCalls:
    """The client tool calls of one session (see the module docstring)."""

    def __init__(
        self,
        *,
        record: Callable[[AgentSessionUpdate], None],
        desk: PermissionDesk,
        turn_running: Callable[[], bool],
        is_open: Callable[[], bool],
    ) -> None:
        self._record = record
        self._desk = desk
        self._turn_running = turn_running
        self._is_open = is_open

    @property
    def turn_running(self) -> bool:
        """True while a prompt of this (live) session is in flight: calls are taken."""
        return self._is_open() and self._turn_running()

    def begin(self, tool: str, arguments: Mapping[str, Any]) -> ClientToolCall:
        """A new call of ``tool``; ``AgentSessionError`` outside a running turn (nothing recorded)."""
        if not self.turn_running:
            raise AgentSessionError(OUTSIDE_A_TURN)
        return ClientToolCall(
            self, f"kernel-{uuid.uuid4().hex[:12]}", tool[:80], _bounded_arguments(arguments)
        )

    async def ask(self, tool_call: Mapping[str, Any], options: Sequence[Mapping[str, Any]]) -> str | None:
        return await self._desk.ask_for_client(tool_call, options, open_=self.turn_running)

    def record_line(
        self,
        call: ClientToolCall,
        status: str,
        *,
        title: str | None = None,
        output: str = "",
        images: Sequence[str] = (),
        cell: Mapping[str, Any] | None = None,
    ) -> None:
        raw: dict[str, Any] = {
            "callId": call.call_id,
            "tool": call.tool,
            "arguments": call.arguments,
            "status": status,
        }
        if title:
            raw["title"] = title[:200]
        if output:
            raw["output"] = _cut(output, OUTPUT_CHARS)
        kept = [image for image in images if isinstance(image, str) and len(image) <= IMAGE_CHARS]
        if kept:
            raw["images"] = kept[:MAX_IMAGES]
        if len(images) > len(raw.get("images", ())):
            raw["imagesLeftOut"] = len(images) - len(raw.get("images", ()))
        for key in ("cellId", "oldSource", "newSource"):
            value = (cell or {}).get(key)
            if isinstance(value, str):
                raw[key] = _cut(value, CELL_SOURCE_CHARS)
        undo = (cell or {}).get("undo")
        if isinstance(undo, Mapping):
            raw["undo"] = dict(undo)
        self._record(KernelToolLine.written(raw))
