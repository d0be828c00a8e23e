"""Silo's parse rules for what describes a session: commands, config options (and the legacy modes and
models they are synthesized from), permission options, session summaries and the title rule.

Lenient like every parser of agent data: nothing raises, unusable items are dropped, unknown types kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from silo_nb.model import (
    AgentCommand,
    AgentCommandInput,
    AgentPermissionOption,
    AgentSessionConfigChoice,
    AgentSessionConfigOption,
    AgentSessionSummary,
    AgentSessionUpdate,
    builder,
)

__all__ = [
    "parse_commands",
    "parse_config_options",
    "parse_permission_options",
    "parse_session_summary",
    "permission_option_fields",
    "session_title",
    "synthesize_legacy_options",
]


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


def permission_option_fields(value: Any) -> tuple[tuple[str, str, str], ...]:
    """Each permission option as ``(option id, name, kind)``, plain strings: what a transcript entry keeps
    (a request can carry 10,000 options; no model is built for them here)."""
    return tuple(_option_fields(item) for item in (value if isinstance(value, list) else ()))


def _option_fields(item: Any) -> tuple[str, str, str]:
    raw = item if type(item) is dict else _mapping(item)  # decoded JSON: a dict, without the ABC check
    option_id, name, kind = raw.get("optionId"), raw.get("name"), raw.get("kind")
    return (
        option_id if type(option_id) is str else str(option_id if option_id is not None else ""),
        name if type(name) is str and name else str(name or option_id or "Option"),
        kind if type(kind) is str else str(kind or ""),
    )


def parse_permission_options(value: Any) -> tuple[AgentPermissionOption, ...]:
    build = builder(AgentPermissionOption)  # the fields are strings already: nothing to validate
    return tuple(
        build({"option_id": option_id, "name": name, "kind": kind})
        for option_id, name, kind in map(_option_fields, value if isinstance(value, list) else ())
    )


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
