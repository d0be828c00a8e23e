"""An ``AgentSessionUpdate`` as a journal line's JSON value and back (camelCase, absent fields omitted).

- The journal's own part is the envelope (``kind``, ``text``, ``content``, ``messageId``, ``timestamp``,
  ``toolCall``, ``plan``, ``usage``, ``raw``, and ``childSessionId`` on a subagent's traffic); the fields
  inside are read by the one lenient field parser (``parse/fields.py``), the wire parser's too.
- :func:`update_json` is ``update.model_dump(mode="json", by_alias=True, exclude_none=True)`` written out
  by hand for these few models: a tenth of the cost, and the wire dict kept as ``raw`` is put in as it is
  (orjson serializes it in C). ``tests/sessions/test_journal_json.py`` checks it against pydantic's dump.
- :func:`journal_line_to_update` reads a line's value leniently, as pydantic's validation reads any line
  Silo or silo_nb wrote (the golden test checks that), without its cost; a field that is not what the
  model holds is dropped on its own (the rest of the line is kept), and an unusable line is ``None``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson

from silo_nb.model import (
    AgentContentBlock,
    AgentPlanEntry,
    AgentSessionUpdate,
    AgentSessionUsage,
    AgentToolCall,
    AgentToolCallContent,
    builder,
)
from silo_nb.updates import (
    block_json,
    content_block,
    is_map,
    items,
)
from silo_nb.updates import (
    plan_entry as read_plan_entry,
)
from silo_nb.updates import (
    tool_call as read_tool_call,
)
from silo_nb.updates import (
    usage as read_usage,
)

_block_model, _update_model = builder(AgentContentBlock), builder(AgentSessionUpdate)

__all__ = ["encode_line", "journal_line_to_update", "update_json"]

_PLAN_ENTRY = (("status", "status"), ("priority", "priority"))


def _set_fields(out: dict[str, Any], fields: dict[str, Any], names: tuple[tuple[str, str], ...]) -> None:
    for attr, key in names:
        value = fields[attr]
        if value is not None:
            out[key] = value


def _tool_content_json(item: AgentToolCallContent) -> dict[str, Any]:
    fields = item.__dict__
    out: dict[str, Any] = {"type": fields["type"]}
    if (content := fields["content"]) is not None:
        out["content"] = block_json(content)
    if (path := fields["path"]) is not None:
        out["path"] = path
    if (old_text := fields["old_text"]) is not None:
        out["oldText"] = old_text
    if (new_text := fields["new_text"]) is not None:
        out["newText"] = new_text
    if (terminal_id := fields["terminal_id"]) is not None:
        out["terminalId"] = terminal_id
    return out


def _tool_call_json(call: AgentToolCall) -> dict[str, Any]:
    fields = call.__dict__
    out: dict[str, Any] = {"toolCallId": fields["tool_call_id"]}
    if (title := fields["title"]) is not None:
        out["title"] = title
    if (kind := fields["kind"]) is not None:
        out["kind"] = kind
    if (status := fields["status"]) is not None:
        out["status"] = status
    if (content := fields["content"]) is not None:
        out["content"] = [_tool_content_json(item) for item in content]
    if (locations := fields["locations"]) is not None:
        out["locations"] = [
            {"path": loc.path} if loc.line is None else {"path": loc.path, "line": loc.line}
            for loc in locations
        ]
    if (raw_input := fields["raw_input"]) is not None:
        out["rawInput"] = raw_input
    if (raw_output := fields["raw_output"]) is not None:
        out["rawOutput"] = raw_output
    return out


def _usage_json(usage: AgentSessionUsage) -> dict[str, Any]:
    out: dict[str, Any] = {"used": usage.used, "size": usage.size}
    if usage.cost is not None:
        out["cost"] = {"amount": usage.cost.amount, "currency": usage.cost.currency}
    return out


def update_json(update: AgentSessionUpdate) -> dict[str, Any]:
    """The journal line's value for ``update``: its camelCase JSON with absent fields omitted."""
    fields = update.__dict__
    out: dict[str, Any] = {"kind": fields["kind"]}
    if (text := fields["text"]) is not None:
        out["text"] = text
    if (content := fields["content"]) is not None:
        out["content"] = block_json(content)
    if (message_id := fields["message_id"]) is not None:
        out["messageId"] = message_id
    if (timestamp := fields["timestamp"]) is not None:
        out["timestamp"] = timestamp
    if (tool_call := fields["tool_call"]) is not None:
        out["toolCall"] = _tool_call_json(tool_call)
    if (plan := fields["plan"]) is not None:
        out["plan"] = [_entry_json(entry) for entry in plan]
    if (usage := fields["usage"]) is not None:
        out["usage"] = _usage_json(usage)
    out["raw"] = fields["raw"]
    if (child := fields["child_session_id"]) is not None:
        out["childSessionId"] = child
    return out


def _entry_json(entry: AgentPlanEntry) -> dict[str, Any]:
    fields = entry.__dict__
    out: dict[str, Any] = {"content": fields["content"]}
    _set_fields(out, fields, _PLAN_ENTRY)
    return out


def encode_line(update: AgentSessionUpdate) -> str:
    """The journal line of ``update`` (no newline). orjson over :func:`update_json`; what orjson refuses
    (a lone surrogate, an integer beyond 64 bits, a value that is not JSON) takes the slow path it always
    took, pydantic's dump and ``json.dumps``, which gives the same values."""
    return _encode(update, update_json(update))


def _encode(update: AgentSessionUpdate, value: dict[str, Any]) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # orjson.JSONEncodeError
        return json.dumps(update.to_json(), ensure_ascii=False, separators=(",", ":"))


# -- reading -----------------------------------------------------------------------------------------


def journal_line_to_update(value: Any) -> AgentSessionUpdate | None:
    """A journal line (Silo's camelCase ``AgentSessionUpdate`` JSON) back to a model; ``None`` if unusable.
    Written out (type checks inline, a builder per model class, no call per field, a text chunk's line
    read without looking for the fields it cannot hold): a restore runs it 100,000 times."""
    if type(value) is not dict and not isinstance(value, Mapping):
        return None
    get = value.get
    kind = get("kind")
    if not isinstance(kind, str):
        return None
    text, content, message_id, raw = get("text"), get("content"), get("messageId"), get("raw")
    if (
        type(content) is dict
        and len(content) == 2
        and type(block_text := content.get("text")) is str
        and type(block_type := content.get("type")) is str
    ):  # a streamed chunk's {"type", "text"}, the most common line: read here, without the call
        content = _block_model(
            {"type": block_type, "text": block_text, "mime_type": None, "uri": None, "name": None}
        )
    elif content is not None:
        content = content_block(content)
    if len(value) == 5 and text is not None and content is not None and message_id is not None and raw:
        timestamp = tool_call = plan = usage = child = None  # the five keys of a chunk's line, and no other
    else:
        child = get("childSessionId")
        child = child if isinstance(child, str) and child else None
        timestamp, tool_call, plan, usage = get("timestamp"), get("toolCall"), get("plan"), get("usage")
        timestamp = timestamp if isinstance(timestamp, str) else None
        tool_call = None if tool_call is None else read_tool_call(tool_call)
        plan = None if plan is None else items(plan, read_plan_entry)
        usage = None if usage is None else read_usage(usage)
    return _update_model(
        {
            "kind": kind,
            "text": text if isinstance(text, str) else None,
            "content": content,
            "message_id": message_id if isinstance(message_id, str) else None,
            "timestamp": timestamp,
            "tool_call": tool_call,
            "plan": plan,
            "usage": usage,
            "raw": raw if type(raw) is dict else dict(raw) if is_map(raw) else {},
            "child_session_id": child,
        }
    )
