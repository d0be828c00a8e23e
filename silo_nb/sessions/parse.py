"""Lenient parsing of agent traffic into silo_nb's models (Silo's parse rules, one function each).

- Nothing here raises on agent data: a malformed optional field becomes absent, an invalid list item is
  dropped, unknown kinds/types/statuses/categories are kept as open strings.
- Agent free-form values (an update's raw object, ``rawInput``/``rawOutput``) are cut below
  ``MAX_RAW_DEPTH`` levels behind ``DEPTH_MARKER``, never lost silently (pydantic serializes ~255 levels).
- Message ids: Silo synthesizes ``silo-msg-<n>`` per run of same-kind text chunks when the agent sends
  none (:class:`MessageIdSynthesizer`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from silo_nb.acp.framing import cut_depth
from silo_nb.sessions.models import (
    AgentCommand,
    AgentCommandInput,
    AgentContentBlock,
    AgentPermissionOption,
    AgentPlanEntry,
    AgentSessionConfigChoice,
    AgentSessionConfigOption,
    AgentSessionCost,
    AgentSessionSummary,
    AgentSessionUpdate,
    AgentSessionUsage,
    AgentToolCall,
    AgentToolCallContent,
    AgentToolCallLocation,
)

__all__ = [
    "DEPTH_MARKER",
    "MAX_RAW_DEPTH",
    "METADATA_KINDS",
    "TEXT_KINDS",
    "MessageIdSynthesizer",
    "journal_line_to_update",
    "parse_commands",
    "parse_config_options",
    "parse_content_block",
    "parse_permission_options",
    "parse_plan",
    "parse_session_summary",
    "parse_tool_call",
    "parse_update",
    "parse_usage",
    "session_title",
    "synthesize_legacy_options",
]

MAX_RAW_DEPTH = 100
DEPTH_MARKER = f"[cut by Silo: nested deeper than {MAX_RAW_DEPTH} levels]"
TEXT_KINDS = frozenset({"agent_message_chunk", "agent_thought_chunk", "user_message_chunk"})
_RUN_BREAKERS = frozenset({"tool_call", "tool_call_update", "plan"})
# Updates that describe the session rather than the conversation: a journal holding only these has no
# transcript worth keeping, and a transcript does not show them (the title is read by ``session_title``).
METADATA_KINDS = frozenset(
    {
        "available_commands_update",
        "current_mode_update",
        "config_option_update",
        "session_info_update",
        "usage_update",
        "turn_end",  # silo_nb's synthesized turn record (sessions/_turns.py)
    }
)


def session_title(update: AgentSessionUpdate) -> str | None:
    """The one title rule: a ``session_info_update``'s ``title``, ``info.title`` or ``sessionInfo.title``."""
    if update.kind != "session_info_update":
        return None
    raw = update.raw
    for candidate in (
        raw.get("title"),
        _mapping(raw.get("info")).get("title"),
        _mapping(raw.get("sessionInfo")).get("title"),
    ):
        if isinstance(candidate, str) and candidate.strip():
            return candidate.strip()
    return None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _finite(value: Any) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None


def parse_content_block(value: Any) -> AgentContentBlock | None:
    raw = _mapping(value)
    block_type = _str(raw.get("type"))
    if block_type is None:
        return None
    resource = _mapping(raw.get("resource"))
    return AgentContentBlock(
        type=block_type,
        text=_str(raw.get("text")) if "text" in raw else _str(resource.get("text")),
        mime_type=_str(raw.get("mimeType")) or _str(resource.get("mimeType")),
        uri=_str(raw.get("uri")) or _str(resource.get("uri")),
        name=_str(raw.get("name")),
    )


def _parse_tool_content(value: Any) -> AgentToolCallContent | None:
    raw = _mapping(value)
    content_type = _str(raw.get("type"))
    if content_type is None:
        return None
    return AgentToolCallContent(
        type=content_type,
        content=parse_content_block(raw.get("content")),
        path=_str(raw.get("path")),
        old_text=_str(raw.get("oldText")),
        new_text=_str(raw.get("newText")),
        terminal_id=_str(raw.get("terminalId")),
    )


def _parse_location(value: Any) -> AgentToolCallLocation | None:
    raw = _mapping(value)
    path = _str(raw.get("path"))
    if path is None:
        return None
    line = raw.get("line")
    return AgentToolCallLocation(path=path, line=line if isinstance(line, int) and line > 0 else None)


def parse_tool_call(value: Any) -> AgentToolCall | None:
    raw = _mapping(value)
    tool_call_id = _str(raw.get("toolCallId"))
    if tool_call_id is None:
        return None
    content = raw.get("content")
    locations = raw.get("locations")
    return AgentToolCall(
        tool_call_id=tool_call_id,
        title=_str(raw.get("title")),
        kind=_str(raw.get("kind")),
        status=_str(raw.get("status")),
        content=(
            tuple(c for c in map(_parse_tool_content, content) if c is not None)
            if isinstance(content, list)
            else None
        ),
        locations=(
            tuple(loc for loc in map(_parse_location, locations) if loc is not None)
            if isinstance(locations, list)
            else None
        ),
        raw_input=cut_depth(raw.get("rawInput"), MAX_RAW_DEPTH, DEPTH_MARKER),
        raw_output=cut_depth(raw.get("rawOutput"), MAX_RAW_DEPTH, DEPTH_MARKER),
    )


def parse_plan(value: Any) -> tuple[AgentPlanEntry, ...]:
    entries: list[AgentPlanEntry] = []
    for item in value if isinstance(value, list) else []:
        raw = _mapping(item)
        content = _str(raw.get("content"))
        if content:
            entries.append(
                AgentPlanEntry(
                    content=content, status=_str(raw.get("status")), priority=_str(raw.get("priority"))
                )
            )
    return tuple(entries)


def parse_usage(raw: Mapping[str, Any]) -> AgentSessionUsage | None:
    used, size = _finite(raw.get("used")), _finite(raw.get("size"))
    if used is None or size is None:
        return None
    cost_raw = _mapping(raw.get("cost"))
    amount, currency = _finite(cost_raw.get("amount")), _str(cost_raw.get("currency"))
    cost = AgentSessionCost(amount=amount, currency=currency) if amount is not None and currency else None
    return AgentSessionUsage(used=used, size=size, cost=cost)


def parse_update(update: Mapping[str, Any]) -> AgentSessionUpdate | None:
    """Normalize a wire ``update`` object; ``None`` when it has no ``sessionUpdate`` kind."""
    kind = _str(update.get("sessionUpdate"))
    if kind is None:
        return None
    update = cut_depth(dict(update), MAX_RAW_DEPTH, DEPTH_MARKER)
    fields: dict[str, Any] = {"kind": kind, "raw": update}
    if kind in TEXT_KINDS:
        content = parse_content_block(update.get("content"))
        if content is not None:
            fields["content"] = content
            fields["text"] = content.text if content.type == "text" else None
        fields["message_id"] = _str(update.get("messageId"))
    elif kind in ("tool_call", "tool_call_update"):
        fields["tool_call"] = parse_tool_call(update)
    elif kind == "plan":
        fields["plan"] = parse_plan(update.get("entries"))
    elif kind == "usage_update":
        fields["usage"] = parse_usage(update)
    return AgentSessionUpdate(**fields)


class MessageIdSynthesizer:
    """Gives id-less text chunks ``silo-msg-<n>``, one per run of consecutive same-kind chunks.

    A run is broken by a change of text kind, by ``tool_call``/``tool_call_update``/``plan``, or by a
    chunk that carries the agent's own id. Other kinds (usage, commands, titles…) do not break a run.
    """

    def __init__(self) -> None:
        self._counter = 0
        self._run_kind: str | None = None
        self._run_id: str | None = None

    def apply(self, update: AgentSessionUpdate) -> AgentSessionUpdate:
        if update.kind in _RUN_BREAKERS:
            self._run_kind = self._run_id = None
            return update
        if update.kind not in TEXT_KINDS:
            return update
        if update.message_id is not None:
            self._run_kind = self._run_id = None
            return update
        if self._run_kind != update.kind or self._run_id is None:
            self._counter += 1
            self._run_kind, self._run_id = update.kind, f"silo-msg-{self._counter}"
        return update.model_copy(update={"message_id": self._run_id})


def parse_commands(value: Any) -> tuple[AgentCommand, ...]:
    commands: list[AgentCommand] = []
    for item in value if isinstance(value, list) else []:
        raw = _mapping(item)
        name = _str(raw.get("name"))
        if not name:
            continue
        input_raw = raw.get("input")
        command_input = (
            AgentCommandInput(hint=_str(input_raw.get("hint"))) if isinstance(input_raw, Mapping) else None
        )
        commands.append(
            AgentCommand(name=name, description=_str(raw.get("description")), input=command_input)
        )
    return tuple(commands)


def _parse_choices(value: Any) -> list[AgentSessionConfigChoice]:
    choices: list[AgentSessionConfigChoice] = []
    for item in value if isinstance(value, list) else []:
        raw = _mapping(item)
        if isinstance(raw.get("options"), list) and "value" not in raw:
            # A group ({group, name, options}): flattened in the agent's order.
            choices.extend(_parse_choices(raw.get("options")))
            continue
        choice_value = _str(raw.get("value"))
        if choice_value is None:
            continue
        choices.append(
            AgentSessionConfigChoice(
                value=choice_value,
                name=_str(raw.get("name")) or choice_value,
                description=_str(raw.get("description")),
            )
        )
    return choices


def parse_config_options(value: Any) -> tuple[AgentSessionConfigOption, ...]:
    """Silo's rules, plus boolean options (kept with a ``bool`` value) and unknown types (kept as is)."""
    options: list[AgentSessionConfigOption] = []
    for item in value if isinstance(value, list) else []:
        raw = _mapping(item)
        option_id = _str(raw.get("id"))
        if not option_id:
            continue
        option_type = _str(raw.get("type")) or "select"
        common: dict[str, Any] = {
            "id": option_id,
            "name": _str(raw.get("name")) or option_id,
            "description": _str(raw.get("description")),
            "category": _str(raw.get("category")) or "",
            "type": option_type,
        }
        if option_type == "select":
            choices = _parse_choices(raw.get("options"))
            if not choices:
                continue
            current = _str(raw.get("currentValue"))
            if current is None:
                current = choices[0].value
            options.append(AgentSessionConfigOption(**common, current_value=current, options=tuple(choices)))
        elif option_type == "boolean":
            current_bool = raw.get("currentValue")
            options.append(
                AgentSessionConfigOption(
                    **common, current_value=current_bool if isinstance(current_bool, bool) else False
                )
            )
        else:
            options.append(AgentSessionConfigOption(**common, current_value=raw.get("currentValue")))
    return tuple(options)


def _legacy_option(
    block: Mapping[str, Any], *, option_id: str, name: str, items: str, item_id: str, current: str
) -> AgentSessionConfigOption | None:
    choices = [
        AgentSessionConfigChoice(
            value=value, name=_str(raw.get("name")) or value, description=_str(raw.get("description"))
        )
        for raw in map(_mapping, _list(block.get(items)))
        if (value := _str(raw.get(item_id)))
    ]
    if not choices:
        return None
    return AgentSessionConfigOption(
        id=option_id,
        name=name,
        category=option_id,
        current_value=_str(block.get(current)) or choices[0].value,
        options=tuple(choices),
    )


def synthesize_legacy_options(result: Mapping[str, Any]) -> tuple[AgentSessionConfigOption, ...]:
    """``mode``/``model`` select options from the legacy ``modes``/``models`` blocks (improvement)."""
    mode = _legacy_option(
        _mapping(result.get("modes")),
        option_id="mode",
        name="Mode",
        items="availableModes",
        item_id="id",
        current="currentModeId",
    )
    model = _legacy_option(
        _mapping(result.get("models")),
        option_id="model",
        name="Model",
        items="availableModels",
        item_id="modelId",
        current="currentModelId",
    )
    return tuple(option for option in (mode, model) if option is not None)


def parse_permission_options(value: Any) -> tuple[AgentPermissionOption, ...]:
    options: list[AgentPermissionOption] = []
    for item in value if isinstance(value, list) else []:
        raw = _mapping(item)
        option_id = raw.get("optionId")
        options.append(
            AgentPermissionOption(
                option_id=str(option_id if option_id is not None else ""),
                name=str(raw.get("name") or option_id or "Option"),
                kind=str(raw.get("kind") or ""),
            )
        )
    return tuple(options)


def parse_session_summary(value: Any) -> AgentSessionSummary | None:
    raw = _mapping(value)
    session_id = _str(raw.get("sessionId"))
    if not session_id:
        return None
    return AgentSessionSummary(
        session_id=session_id,
        cwd=_str(raw.get("cwd")),
        title=_str(raw.get("title")),
        updated_at=_str(raw.get("updatedAt")),
        raw=dict(raw),
    )


def journal_line_to_update(value: Any) -> AgentSessionUpdate | None:
    """A journal line (Silo's camelCase ``AgentSessionUpdate`` JSON) back to a model; ``None`` if unusable."""
    if not isinstance(value, Mapping) or not isinstance(value.get("kind"), str):
        return None
    try:
        return AgentSessionUpdate.model_validate(value)
    except ValueError:
        # Keep what can be kept: the kind and the raw update, never the whole transcript lost.
        raw = value.get("raw")
        return AgentSessionUpdate(kind=value["kind"], raw=dict(raw) if isinstance(raw, Mapping) else {})
