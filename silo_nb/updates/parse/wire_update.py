"""The per-update parse rules: a wire ``session/update`` to an ``AgentSessionUpdate``.

- Lenient (Silo's rules, in ``fields.py``, the journal reader's too): nothing raises on agent data; a
  malformed optional field becomes absent, an invalid list item is dropped, unknown kinds/types/statuses
  are kept as open strings. Which field a kind fills comes from the kinds table (``kinds.py``).
- Hot: an agent streams tens of thousands of these a second. Every value is checked here, so the models
  are built by ``models.builder``'s functions (no pydantic validation), and :func:`parse_wire_update`
  keeps the freshly decoded wire dict itself as ``raw`` (no copy) and takes the synthesized message id
  on the way.
- Agent free-form values (the raw update, ``rawInput``/``rawOutput``) are cut below ``MAX_RAW_DEPTH``
  levels behind ``DEPTH_MARKER``. Long strings are kept whole (issue 21): the wire's line limit already
  bounds them, the journal keeps its record whole up to its own line limit (``journal/writer.py`` cuts a
  line that would pass it, with :func:`cut_long_strings`' marker), and the views bound what they show.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from silo_nb.acp import cut_depth
from silo_nb.model import (
    RUN_BREAKERS,
    SILO_NB_KINDS,
    TEXT_KINDS,
    TOOL_KINDS,
    AgentSessionUpdate,
    builder,
)
from silo_nb.updates.parse.fields import (
    DEPTH_MARKER,
    MAX_RAW_DEPTH,
    block_json,
    content_block,
    plan_entries,
)
from silo_nb.updates.parse.fields import tool_call as read_tool_call
from silo_nb.updates.parse.fields import usage as read_usage

__all__ = [
    "MAX_FIELD_CHARS",
    "MessageIdSynthesizer",
    "cut_long_strings",
    "parse_session_update",
    "parse_update",
    "parse_wire_update",
]

_update_model = builder(AgentSessionUpdate)

# Strings of at most this many characters are never cut, wherever they go (a journal line holding three
# copies of one still fits the line limit, whatever the characters).
MAX_FIELD_CHARS = 1 << 20


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
    update: dict[str, Any],
    synth: MessageIdSynthesizer | None,
    *,
    shallow: bool = False,
    short: bool = False,
    child: str | None = None,
) -> tuple[AgentSessionUpdate, dict[str, Any] | None] | None:
    """:func:`parse_wire_update`, and for the common text chunk also its journal value (what
    ``update_json`` gives), made here from what parsing already has: the wire's own ``content`` object is
    the journal's when it holds just the type and the text. What the caller knows of ``update``'s line
    spares a walk: ``shallow``, nothing nests ``MAX_RAW_DEPTH`` deep (the line opens fewer brackets).
    ``short`` is accepted for the callers of the earlier per-string cut, and means nothing now. ``child``:
    the subagent session the update was sent under (its ``child_session_id``)."""
    kind = update.get("sessionUpdate")
    if not isinstance(kind, str) or kind in SILO_NB_KINDS:
        # A kind only the session writes (a turn's end, a permission decision) is not the agent's to
        # send: believing it would let an agent forge a turn's outcome or a user's answer.
        return None
    if not shallow:
        update = cut_depth(update, MAX_RAW_DEPTH, DEPTH_MARKER)
    text = content = message_id = tool_call = plan = usage = block = None
    if kind in TEXT_KINDS:
        block = update.get("content")
        content = content_block(block)
        if content is not None and content.type == "text":
            text = content.text
        message_id = update.get("messageId")
        if not isinstance(message_id, str):
            message_id = None
    elif kind in TOOL_KINDS:
        tool_call = read_tool_call(update)  # the whole update was bounded above
    elif kind == "plan":
        plan = plan_entries(update.get("entries"))
    elif kind == "usage_update":
        usage = read_usage(update)
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
            "child_session_id": child,
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
    if child is not None:
        value["childSessionId"] = child
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
