"""The one lenient field parser: agent values (from the wire or a journal line) into silo_nb's models.

- Silo's rules (§1.6), the same for both sources: nothing raises; a malformed optional field becomes
  absent (a field that is not a string, a location line that is not a positive integer, a plan step
  without content text, a usage number that is not finite, a cost without both its fields or below 0),
  an invalid list item is dropped, unknown types and statuses are kept.
- The wire parser (``parse/wire_update.py``) and the journal reader (``journal/lines.py``) both read through
  these functions; only the envelopes differ (a ``session/update`` object, a journal line).
- Hot (a restore reads 100,000 lines, an agent streams tens of thousands a second): type checks are
  inline, models are built by ``models.builder``'s functions without validation (every value is checked
  here), decoded JSON is a plain ``dict`` so ``type(value) is dict`` comes before the ABC check.
- :func:`block_json` is the other way: a content block as its camelCase JSON (absent fields omitted).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

from silo_nb.acp import cut_depth
from silo_nb.model import (
    AgentContentBlock,
    AgentPlanEntry,
    AgentSessionCost,
    AgentSessionUsage,
    AgentToolCall,
    AgentToolCallContent,
    AgentToolCallLocation,
    builder,
)

__all__ = [
    "DEPTH_MARKER",
    "MAX_RAW_DEPTH",
    "block_json",
    "content_block",
    "is_map",
    "items",
    "location",
    "plan_entries",
    "plan_entry",
    "text_or_none",
    "tool_call",
    "tool_content",
    "usage",
]

MAX_RAW_DEPTH = 100
DEPTH_MARKER = f"[cut by Silo: nested deeper than {MAX_RAW_DEPTH} levels]"

_block_model, _tool_call_model = builder(AgentContentBlock), builder(AgentToolCall)
_content_model, _location_model = builder(AgentToolCallContent), builder(AgentToolCallLocation)
_plan_entry_model, _usage_model = builder(AgentPlanEntry), builder(AgentSessionUsage)
_cost_model = builder(AgentSessionCost)


def is_map(value: Any) -> TypeGuard[Mapping[str, Any]]:
    return type(value) is dict or isinstance(value, Mapping)  # what orjson made, else the slower check


def text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _finite(value: Any) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None


def _as_journaled(value: Any) -> Any:
    """A free-form value as JSON keeps it: a bare ``NaN``/``Infinity`` (the stdlib reads them off the wire)
    is ``null``, so the call read back from the journal is the call parsed (nested ones are written
    ``null`` in place, which reads back the same)."""
    return None if type(value) is float and not math.isfinite(value) else value


def content_block(value: Any) -> AgentContentBlock | None:
    """A content block: each field present only if it is a string (Silo §1.6); an embedded resource's
    text, MIME type and URI are read from inside it when the block itself has none."""
    if type(value) is not dict and not isinstance(value, Mapping):
        return None
    get = value.get
    block_type, text = get("type"), get("text")
    if not isinstance(block_type, str):
        return None
    if len(value) == 2 and isinstance(text, str):  # {"type", "text"}: a streamed chunk's, nothing else
        return _block_model({"type": block_type, "text": text, "mime_type": None, "uri": None, "name": None})
    mime_type, uri, name, resource = get("mimeType"), get("uri"), get("name"), get("resource")
    if resource is not None and is_map(resource):  # ACP's embedded resource: {"resource": {...}}
        if not isinstance(text, str) and "text" not in value:
            text = resource.get("text")
        if not isinstance(mime_type, str):
            mime_type = resource.get("mimeType")
        if not isinstance(uri, str):
            uri = resource.get("uri")
    return _block_model(
        {
            "type": block_type,
            "text": text if isinstance(text, str) else None,
            "mime_type": mime_type if isinstance(mime_type, str) else None,
            "uri": uri if isinstance(uri, str) else None,
            "name": name if isinstance(name, str) else None,
        }
    )


def block_json(block: AgentContentBlock) -> dict[str, Any]:
    """A content block's camelCase JSON (absent fields omitted). Written out: one goes into every chunk's
    journal line."""
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


def tool_content(value: Any) -> AgentToolCallContent | None:
    """One item of a tool call's ``content``: ``content``, ``diff``, ``terminal`` or a vendor type."""
    if type(value) is not dict and not isinstance(value, Mapping):
        return None
    get = value.get
    content_type = get("type")
    if not isinstance(content_type, str):
        return None
    content, path, old_text = get("content"), get("path"), get("oldText")
    new_text, terminal_id = get("newText"), get("terminalId")
    return _content_model(
        {
            "type": content_type,
            "content": None if content is None else content_block(content),
            "path": path if isinstance(path, str) else None,
            "old_text": old_text if isinstance(old_text, str) else None,
            "new_text": new_text if isinstance(new_text, str) else None,
            "terminal_id": terminal_id if isinstance(terminal_id, str) else None,
        }
    )


def location(value: Any) -> AgentToolCallLocation | None:
    if type(value) is not dict and not isinstance(value, Mapping):
        return None
    path, line = value.get("path"), value.get("line")
    if not isinstance(path, str):
        return None
    # int(): what validation made of it (``true`` is 1, as pydantic's lax int reads it). Lines are 1-based.
    return _location_model({"path": path, "line": int(line) if isinstance(line, int) and line > 0 else None})


def items(value: Any, read: Callable[[Any], Any]) -> tuple[Any, ...] | None:
    """A list's items read by ``read``, the unusable ones dropped; None when ``value`` is not a list."""
    if not isinstance(value, list):
        return None
    return tuple(filter(None, map(read, value)))  # the models are all true: only the Nones go


def tool_call(value: Any, *, cut: bool = False) -> AgentToolCall | None:
    """A tool call or a patch to one (absent fields: unchanged). ``cut``: bound ``rawInput`` and
    ``rawOutput`` below ``MAX_RAW_DEPTH`` levels (the wire's, unless its whole update was bounded)."""
    if type(value) is not dict and not isinstance(value, Mapping):
        return None
    get = value.get
    call_id = get("toolCallId")
    if not isinstance(call_id, str):
        return None
    title, kind, status = get("title"), get("kind"), get("status")
    content, locations = get("content"), get("locations")
    raw_input, raw_output = _as_journaled(get("rawInput")), _as_journaled(get("rawOutput"))
    if cut:
        raw_input = cut_depth(raw_input, MAX_RAW_DEPTH, DEPTH_MARKER)
        raw_output = cut_depth(raw_output, MAX_RAW_DEPTH, DEPTH_MARKER)
    return _tool_call_model(
        {
            "tool_call_id": call_id,
            "title": title if isinstance(title, str) else None,
            "kind": kind if isinstance(kind, str) else None,
            "status": status if isinstance(status, str) else None,
            "content": None if content is None else items(content, tool_content),
            "locations": None if locations is None else items(locations, location),
            "raw_input": raw_input,
            "raw_output": raw_output,
        }
    )


def plan_entry(value: Any) -> AgentPlanEntry | None:
    if type(value) is not dict and not isinstance(value, Mapping):
        return None
    content, status, priority = value.get("content"), value.get("status"), value.get("priority")
    if not isinstance(content, str) or not content:
        return None
    return _plan_entry_model(
        {
            "content": content,
            "status": status if isinstance(status, str) else None,
            "priority": priority if isinstance(priority, str) else None,
        }
    )


def plan_entries(value: Any) -> tuple[AgentPlanEntry, ...]:
    """The plan's steps (a step without content text is dropped); ``()`` for anything but a list."""
    return items(value, plan_entry) or ()


def usage(value: Any) -> AgentSessionUsage | None:
    """Context used and window size (finite numbers both, else None), and the cost when it has both an
    amount (finite, not below 0: a negative one would lower a budget's spent total) and a currency."""
    if type(value) is not dict and not isinstance(value, Mapping):
        return None
    used, size = _finite(value.get("used")), _finite(value.get("size"))
    if used is None or size is None:
        return None
    cost = value.get("cost")
    amount = _finite(cost.get("amount")) if is_map(cost) else None
    currency = cost.get("currency") if is_map(cost) else None
    return _usage_model(
        {
            "used": used,
            "size": size,
            "cost": (
                _cost_model({"amount": amount, "currency": currency})
                if amount is not None and amount >= 0 and isinstance(currency, str)
                else None
            ),
        }
    )
