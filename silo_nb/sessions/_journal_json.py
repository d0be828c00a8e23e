"""An ``AgentSessionUpdate`` as a journal line's JSON value and back (camelCase, absent fields omitted).

- :func:`update_json` is ``update.model_dump(mode="json", by_alias=True, exclude_none=True)`` written out
  by hand for these few models: a tenth of the cost, and the wire dict kept as ``raw`` is put in as it is
  (orjson serializes it in C). ``tests/sessions/test_journal_json.py`` checks it against pydantic's dump.
- :func:`journal_line_to_update` reads a line's value leniently, the way pydantic's validation read it
  for any line Silo or silo_nb wrote (the golden test checks that), without its cost; a field that is
  not what the model holds is dropped on its own (the rest of the line is kept), and an unusable line is
  ``None``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson

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
    built,
)

_block_model, _update_model = builder(AgentContentBlock), builder(AgentSessionUpdate)
_tool_call_model, _content_model = builder(AgentToolCall), builder(AgentToolCallContent)
_location_model = builder(AgentToolCallLocation)

__all__ = ["block_json", "encode_line", "journal_line_to_update", "update_json"]

_PLAN_ENTRY = (("status", "status"), ("priority", "priority"))


def _set_fields(out: dict[str, Any], fields: dict[str, Any], names: tuple[tuple[str, str], ...]) -> None:
    for attr, key in names:
        value = fields[attr]
        if value is not None:
            out[key] = value


def block_json(block: AgentContentBlock) -> dict[str, Any]:
    # Written out (no loop, no call): one of these goes into every text chunk's line.
    fields = block.__dict__
    out: dict[str, Any] = {"type": fields["type"]}
    if (text := fields["text"]) is not None:
        out["text"] = text
    if (mime_type := fields["mime_type"]) is not None:
        out["mimeType"] = mime_type
    if (uri := fields["uri"]) is not None:
        out["uri"] = uri
    if (name := fields["name"]) is not None:
        out["name"] = name
    return out


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


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: Any) -> int | float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _block(value: Any) -> AgentContentBlock | None:
    if type(value) is not dict and not isinstance(value, Mapping):
        return None
    get = value.get
    block_type, text = get("type"), get("text")
    if not isinstance(block_type, str):
        return None
    if len(value) == 2 and isinstance(text, str):  # {"type", "text"}: a streamed chunk's, nothing else
        return _block_model({"type": block_type, "text": text, "mime_type": None, "uri": None, "name": None})
    mime_type, uri, name = get("mimeType"), get("uri"), get("name")
    return _block_model(
        {
            "type": block_type,
            "text": text if isinstance(text, str) else None,
            "mime_type": mime_type if isinstance(mime_type, str) else None,
            "uri": uri if isinstance(uri, str) else None,
            "name": name if isinstance(name, str) else None,
        }
    )


def _is_map(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)  # what orjson made, else the slower check


def _tool_content(value: Any) -> AgentToolCallContent | None:
    if not _is_map(value) or not isinstance(item_type := value.get("type"), str):
        return None
    get = value.get
    content, path, old_text = get("content"), get("path"), get("oldText")
    new_text, terminal_id = get("newText"), get("terminalId")
    return _content_model(
        {
            "type": item_type,
            "content": None if content is None else _block(content),
            "path": path if isinstance(path, str) else None,
            "old_text": old_text if isinstance(old_text, str) else None,
            "new_text": new_text if isinstance(new_text, str) else None,
            "terminal_id": terminal_id if isinstance(terminal_id, str) else None,
        }
    )


def _location(value: Any) -> AgentToolCallLocation | None:
    if not _is_map(value) or not isinstance(path := value.get("path"), str):
        return None
    line = value.get("line")
    return _location_model({"path": path, "line": int(line) if isinstance(line, int) else None})


def _items(value: Any, read: Any) -> tuple[Any, ...] | None:
    if not isinstance(value, list):
        return None
    return tuple(filter(None, map(read, value)))  # the models are all true: only the Nones go


def _tool_call(value: Any) -> AgentToolCall | None:
    if not _is_map(value) or not isinstance(call_id := value.get("toolCallId"), str):
        return None
    get = value.get
    title, kind, status = get("title"), get("kind"), get("status")
    content, locations = get("content"), get("locations")
    return _tool_call_model(
        {
            "tool_call_id": call_id,
            "title": title if isinstance(title, str) else None,
            "kind": kind if isinstance(kind, str) else None,
            "status": status if isinstance(status, str) else None,
            "content": None if content is None else _items(content, _tool_content),
            "locations": None if locations is None else _items(locations, _location),
            "raw_input": get("rawInput"),
            "raw_output": get("rawOutput"),
        }
    )


def _entry(value: Any) -> AgentPlanEntry | None:
    if not isinstance(value, Mapping) or not isinstance(value.get("content"), str):
        return None
    return built(
        AgentPlanEntry,
        {
            "content": value["content"],
            "status": _str(value.get("status")),
            "priority": _str(value.get("priority")),
        },
    )


def _usage(value: Any) -> AgentSessionUsage | None:
    if not isinstance(value, Mapping):
        return None
    used, size = _number(value.get("used")), _number(value.get("size"))
    if used is None or size is None:
        return None
    cost = value.get("cost")
    amount = _number(cost.get("amount")) if isinstance(cost, Mapping) else None
    currency = cost.get("currency") if isinstance(cost, Mapping) else None
    return built(
        AgentSessionUsage,
        {
            "used": used,
            "size": size,
            "cost": (
                built(AgentSessionCost, {"amount": amount, "currency": currency})
                if amount is not None and isinstance(currency, str)
                else None
            ),
        },
    )


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
        content = _block(content)
    if len(value) == 5 and text is not None and content is not None and message_id is not None and raw:
        timestamp = tool_call = plan = usage = None  # the five keys of a chunk's line, and no other
    else:
        timestamp, tool_call, plan, usage = get("timestamp"), get("toolCall"), get("plan"), get("usage")
        timestamp = timestamp if isinstance(timestamp, str) else None
        tool_call = None if tool_call is None else _tool_call(tool_call)
        plan = None if plan is None else _items(plan, _entry)
        usage = None if usage is None else _usage(usage)
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
            "raw": raw if type(raw) is dict else dict(raw) if isinstance(raw, Mapping) else {},
        }
    )
