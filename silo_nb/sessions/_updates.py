"""The per-update parse rules: a wire ``session/update`` to an ``AgentSessionUpdate`` (re-exported by
``parse.py``, which holds Silo's other parse rules).

- Lenient (Silo's rules): nothing raises on agent data; a malformed optional field becomes absent, an
  invalid list item is dropped, unknown kinds/types/statuses are kept as open strings.
- Hot: an agent streams tens of thousands of these a second. Every value is checked here, so the models
  are built by ``models.builder``'s functions (no pydantic validation), and :func:`parse_wire_update`
  keeps the freshly decoded wire dict itself as ``raw`` (no copy) and takes the synthesized message id
  on the way.
- Agent free-form values (the raw update, ``rawInput``/``rawOutput``) are cut below ``MAX_RAW_DEPTH``
  levels behind ``DEPTH_MARKER``, and strings longer than ``MAX_FIELD_CHARS`` with a marker saying how
  much was cut: bounded in the journal and in memory, never silently (issue 8, item 6).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from silo_nb.acp.framing import cut_depth
from silo_nb.sessions._journal_json import block_json
from silo_nb.sessions.kinds import RUN_BREAKERS, SILO_NB_KINDS, TEXT_KINDS, TOOL_KINDS
from silo_nb.sessions.models import (
    AgentContentBlock,
    AgentPlanEntry,
    AgentSessionCost,
    AgentSessionUpdate,
    AgentSessionUsage,
    AgentToolCall,
    AgentToolCallContent,
    AgentToolCallLocation,
    builder,
)

__all__ = [
    "DEPTH_MARKER",
    "MAX_FIELD_CHARS",
    "MAX_RAW_DEPTH",
    "TEXT_KINDS",
    "MessageIdSynthesizer",
    "cut_long_strings",
    "parse_content_block",
    "parse_plan",
    "parse_session_update",
    "parse_tool_call",
    "parse_update",
    "parse_usage",
    "parse_wire_update",
]

_block_model, _update_model = builder(AgentContentBlock), builder(AgentSessionUpdate)
_tool_call_model, _content_model = builder(AgentToolCall), builder(AgentToolCallContent)
_location_model, _plan_entry_model = builder(AgentToolCallLocation), builder(AgentPlanEntry)
_usage_model, _cost_model = builder(AgentSessionUsage), builder(AgentSessionCost)

MAX_RAW_DEPTH = 100
DEPTH_MARKER = f"[cut by Silo: nested deeper than {MAX_RAW_DEPTH} levels]"
# Longer strings from the agent are cut (with a marker saying how much): the journal repeats a chunk's
# text three times (Silo's format), so one 60 MB string would otherwise be 180 MB on disk and in memory.
MAX_FIELD_CHARS = 1 << 20


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _mapping(value: Any) -> Mapping[str, Any]:
    # type() first: decoded JSON is a plain dict, and the ABC's isinstance costs ten times more.
    return value if type(value) is dict or isinstance(value, Mapping) else {}


def _finite(value: Any) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None


def parse_content_block(value: Any) -> AgentContentBlock | None:
    if type(value) is not dict and not isinstance(value, Mapping):
        return None
    block_type = value.get("type")
    if not isinstance(block_type, str):
        return None
    text = value.get("text")
    if len(value) == 2 and isinstance(text, str):  # {"type", "text"}: the streamed chunk, nothing else
        return _block_model(
            {"type": block_type, "text": text, "mime_type": None, "uri": None, "name": None},
        )
    mime_type = value.get("mimeType")
    uri = value.get("uri")
    name = value.get("name")
    resource = value.get("resource")
    if resource is None:  # the common case: no embedded resource to fall back on
        return _block_model(
            {
                "type": block_type,
                "text": text if isinstance(text, str) else None,
                "mime_type": mime_type if isinstance(mime_type, str) and mime_type else None,
                "uri": uri if isinstance(uri, str) and uri else None,
                "name": name if isinstance(name, str) else None,
            },
        )
    nested = _mapping(resource)
    return _block_model(
        {
            "type": block_type,
            "text": _str(text) if "text" in value else _str(nested.get("text")),
            "mime_type": _str(mime_type) or _str(nested.get("mimeType")),
            "uri": _str(uri) or _str(nested.get("uri")),
            "name": _str(name),
        },
    )


def _parse_tool_content(value: Any) -> AgentToolCallContent | None:
    if type(value) is not dict and not isinstance(value, Mapping):
        return None
    get = value.get
    content_type, content = get("type"), get("content")
    if not isinstance(content_type, str):
        return None
    path, old_text, new_text, terminal_id = get("path"), get("oldText"), get("newText"), get("terminalId")
    return _content_model(
        {
            "type": content_type,
            "content": None if content is None else parse_content_block(content),
            "path": path if isinstance(path, str) else None,
            "old_text": old_text if isinstance(old_text, str) else None,
            "new_text": new_text if isinstance(new_text, str) else None,
            "terminal_id": terminal_id if isinstance(terminal_id, str) else None,
        },
    )


def _parse_location(value: Any) -> AgentToolCallLocation | None:
    if type(value) is not dict and not isinstance(value, Mapping):
        return None
    path, line = value.get("path"), value.get("line")
    if not isinstance(path, str):
        return None
    # int(): what validation made of it (``true`` is 1, as pydantic's lax int reads it).
    return _location_model(
        {"path": path, "line": int(line) if isinstance(line, int) and line > 0 else None},
    )


def parse_tool_call(value: Any, *, cut: bool = True) -> AgentToolCall | None:
    """A tool call or a patch to one (``cut``: bound ``rawInput``/``rawOutput``'s depth; the caller may
    have bounded the whole update already)."""
    raw = _mapping(value)
    tool_call_id = _str(raw.get("toolCallId"))
    if tool_call_id is None:
        return None
    content = raw.get("content")
    locations = raw.get("locations")
    raw_input = raw.get("rawInput")
    raw_output = raw.get("rawOutput")
    if cut:
        raw_input = cut_depth(raw_input, MAX_RAW_DEPTH, DEPTH_MARKER)
        raw_output = cut_depth(raw_output, MAX_RAW_DEPTH, DEPTH_MARKER)
    return _tool_call_model(
        {
            "tool_call_id": tool_call_id,
            "title": _str(raw.get("title")),
            "kind": _str(raw.get("kind")),
            "status": _str(raw.get("status")),
            "content": (
                tuple(c for c in map(_parse_tool_content, content) if c is not None)
                if isinstance(content, list)
                else None
            ),
            "locations": (
                tuple(loc for loc in map(_parse_location, locations) if loc is not None)
                if isinstance(locations, list)
                else None
            ),
            "raw_input": raw_input,
            "raw_output": raw_output,
        },
    )


def parse_plan(value: Any) -> tuple[AgentPlanEntry, ...]:
    entries: list[AgentPlanEntry] = []
    for item in value if isinstance(value, list) else []:
        raw = _mapping(item)
        content = _str(raw.get("content"))
        if content:
            entries.append(
                _plan_entry_model(
                    {
                        "content": content,
                        "status": _str(raw.get("status")),
                        "priority": _str(raw.get("priority")),
                    },
                )
            )
    return tuple(entries)


def parse_usage(raw: Mapping[str, Any]) -> AgentSessionUsage | None:
    used, size = _finite(raw.get("used")), _finite(raw.get("size"))
    if used is None or size is None:
        return None
    cost_raw = _mapping(raw.get("cost"))
    amount, currency = _finite(cost_raw.get("amount")), _str(cost_raw.get("currency"))
    cost = _cost_model({"amount": amount, "currency": currency}) if amount is not None and currency else None
    return _usage_model({"used": used, "size": size, "cost": cost})


def cut_long_strings(value: Any, limit: int = MAX_FIELD_CHARS) -> Any:
    """``value`` with every string longer than ``limit`` characters cut to ``limit`` and marked
    (``… [cut by Silo: N more characters]``); ``value`` itself, uncopied, when none is that long."""
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        return f"{value[:limit]}… [cut by Silo: {len(value) - limit:,} more characters]"
    if isinstance(value, dict):
        items = {key: cut_long_strings(item, limit) for key, item in value.items()}
        return value if all(items[key] is item for key, item in value.items()) else items
    if isinstance(value, list):
        cut = [cut_long_strings(item, limit) for item in value]
        return value if all(a is b for a, b in zip(cut, value, strict=True)) else cut
    return value


def parse_update(update: Mapping[str, Any]) -> AgentSessionUpdate | None:
    """Normalize a wire ``update`` object; ``None`` when it has no ``sessionUpdate`` kind (or one of the
    kinds only silo_nb writes, ``kinds.SILO_NB_KINDS``). ``raw`` is a
    copy (the caller keeps its dict); the session's own path is :func:`parse_wire_update`."""
    if not isinstance(update.get("sessionUpdate"), str):
        return None
    return parse_wire_update(dict(update))


def parse_wire_update(
    update: dict[str, Any], synth: MessageIdSynthesizer | None = None
) -> AgentSessionUpdate | None:
    """:func:`parse_update` for a dict nothing else holds (just decoded): it becomes ``raw`` as is, cut only
    if something in it nests deeper than ``MAX_RAW_DEPTH``. ``synth`` gives id-less text chunks theirs."""
    parsed = parse_session_update(update, synth)
    return None if parsed is None else parsed[0]


def parse_session_update(
    update: dict[str, Any], synth: MessageIdSynthesizer | None, *, shallow: bool = False, short: bool = False
) -> tuple[AgentSessionUpdate, dict[str, Any] | None] | None:
    """:func:`parse_wire_update`, and for the common text chunk also its journal value (what
    ``update_json`` gives), made here from what parsing already has: the wire's own ``content`` object is
    the journal's when it holds just the type and the text. What the caller knows of ``update``'s line
    spares a walk: ``shallow``, nothing nests ``MAX_RAW_DEPTH`` deep (the line opens fewer brackets);
    ``short``, no string is longer than ``MAX_FIELD_CHARS`` (the line is not that long)."""
    kind = update.get("sessionUpdate")
    if not isinstance(kind, str) or kind in SILO_NB_KINDS:
        # A kind only the session writes (a turn's end, a permission decision) is not the agent's to
        # send: believing it would let an agent forge a turn's outcome or a user's answer.
        return None
    if not shallow:
        update = cut_depth(update, MAX_RAW_DEPTH, DEPTH_MARKER)
    if not short:
        update = cut_long_strings(update)
    text = content = message_id = tool_call = plan = usage = block = None
    if kind in TEXT_KINDS:
        block = update.get("content")
        content = parse_content_block(block)
        if content is not None and content.type == "text":
            text = content.text
        message_id = update.get("messageId")
        if not isinstance(message_id, str):
            message_id = None
    elif kind in TOOL_KINDS:
        tool_call = parse_tool_call(update, cut=False)  # the whole update was bounded above
    elif kind == "plan":
        plan = parse_plan(update.get("entries"))
    elif kind == "usage_update":
        usage = parse_usage(update)
    if synth is not None:
        message_id = synth.message_id(kind, message_id)
    parsed = _update_model(
        {
            "kind": kind,
            "text": text,
            "content": content,
            "message_id": message_id,
            "timestamp": None,
            "tool_call": tool_call,
            "plan": plan,
            "usage": usage,
            "raw": update,
        },
    )
    if text is None or message_id is None or content is None:
        return parsed, None
    own = type(block) is dict and len(block) == 2 and "text" in block  # exactly {"type": "text", "text": …}
    value = {
        "kind": kind,
        "text": text,
        "content": block if own else block_json(content),
        "messageId": message_id,
        "raw": update,
    }
    return parsed, value


class MessageIdSynthesizer:
    """Gives id-less text chunks ``silo-msg-<n>``, one per run of consecutive same-kind chunks.

    A run is broken by a change of text kind, by ``tool_call``/``tool_call_update``/``plan``, or by a
    chunk that carries the agent's own id. Other kinds (usage, commands, titles…) do not break a run.
    """

    def __init__(self) -> None:
        self._counter = 0
        self._run_kind: str | None = None
        self._run_id: str | None = None

    def message_id(self, kind: str, message_id: str | None) -> str | None:
        """The id an update of ``kind`` carrying ``message_id`` gets (advances the run)."""
        if kind in RUN_BREAKERS:
            self._run_kind = self._run_id = None
            return message_id
        if kind not in TEXT_KINDS:
            return message_id
        if message_id is not None:
            self._run_kind = self._run_id = None
            return message_id
        if self._run_kind != kind or self._run_id is None:
            self._counter += 1
            self._run_kind, self._run_id = kind, f"silo-msg-{self._counter}"
        return self._run_id

    def apply(self, update: AgentSessionUpdate) -> AgentSessionUpdate:
        message_id = self.message_id(update.kind, update.message_id)
        if message_id == update.message_id:
            return update
        return _update_model({**update.__dict__, "message_id": message_id})
