"""What an agent's question asks for: ACP's ``requestedSchema`` (a flat JSON schema) read leniently into
fields, and an answer checked against them before anything is sent.

- Field types: ``string`` (with ``enum`` / titled ``oneOf`` choices: a pick), ``number``, ``integer``,
  ``boolean`` and ``array`` (a multi-select of string ``enum`` / titled ``anyOf`` items), each with a
  title, a description, a default and whether it is ``required``; a property of another type is kept
  (shown, never answered). Titles and descriptions are cut at :data:`TEXT_LIMIT` characters; at most
  :data:`FIELD_LIMIT` fields are read (a schema of 10,000 properties is said, not rendered).
- :func:`check_answer` raises ``ValueError`` naming the field (missing, wrong type, out of range, not a
  choice) and returns the values in the shape ACP sends back (strings, numbers, booleans, string lists).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["FIELD_LIMIT", "TEXT_LIMIT", "QuestionField", "check_answer", "read_fields"]

FIELD_LIMIT = 200
TEXT_LIMIT = 500
KNOWN_TYPES = ("string", "number", "integer", "boolean", "array")


def _text(value: Any) -> str | None:
    return value[:TEXT_LIMIT] if isinstance(value, str) else None


@dataclass(frozen=True)
class QuestionField:
    """One field of a question's form."""

    name: str
    type: str
    title: str
    description: str | None = None
    required: bool = False
    default: Any = None
    choices: tuple[tuple[str, str], ...] = ()  # (value, title) for a pick or a multi-select
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None

    @property
    def answerable(self) -> bool:
        return self.type in KNOWN_TYPES


def _choices(schema: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    enum = schema.get("enum")
    if isinstance(enum, list):
        return tuple((v, v) for v in enum if isinstance(v, str))
    for key in ("oneOf", "anyOf"):
        options = schema.get(key)
        if isinstance(options, list):
            return tuple(
                (o["const"], _text(o.get("title")) or o["const"])
                for o in options
                if isinstance(o, Mapping) and isinstance(o.get("const"), str)
            )
    return ()


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def read_fields(schema: Any) -> tuple[tuple[QuestionField, ...], int]:
    """(the fields, how many properties there were): leniently, bounded (see the module docstring)."""
    schema = schema if isinstance(schema, Mapping) else {}
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = schema.get("required")
    required_names = {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
    fields: list[QuestionField] = []
    for name, raw in list(properties.items())[:FIELD_LIMIT]:
        if not isinstance(name, str) or not isinstance(raw, Mapping):
            continue
        declared, listed = raw.get("type"), raw.get("items")
        kind: str = declared if isinstance(declared, str) else "string"
        items: Mapping[str, Any] = listed if isinstance(listed, Mapping) else {}
        length = (raw.get("minLength"), raw.get("maxLength"))
        fields.append(
            QuestionField(
                name=name[:TEXT_LIMIT],
                type=kind[:40],
                title=_text(raw.get("title")) or name[:TEXT_LIMIT],
                description=_text(raw.get("description")),
                required=name in required_names,
                default=raw.get("default"),
                choices=_choices(items) if kind == "array" else _choices(raw),
                minimum=_number(raw.get("minimum" if kind != "array" else "minItems")),
                maximum=_number(raw.get("maximum" if kind != "array" else "maxItems")),
                min_length=length[0] if type(length[0]) is int else None,
                max_length=length[1] if type(length[1]) is int else None,
            )
        )
    return tuple(fields), len(properties)


def _check(field: QuestionField, value: Any) -> Any:
    where = f"field {field.name!r}"
    if field.type == "boolean":
        if not isinstance(value, bool):
            raise ValueError(f"{where}: expected true or false, got {value!r}")
        return value
    if field.type in ("number", "integer"):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"{where}: expected a {field.type}, got {value!r}")
        if field.type == "integer" and value != int(value):
            raise ValueError(f"{where}: expected a whole number, got {value!r}")
        if field.minimum is not None and value < field.minimum:
            raise ValueError(f"{where}: {value} is below the minimum {field.minimum:g}")
        if field.maximum is not None and value > field.maximum:
            raise ValueError(f"{where}: {value} is above the maximum {field.maximum:g}")
        return int(value) if field.type == "integer" else value
    if field.type == "array":
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{where}: expected a list of strings, got {value!r}")
        allowed = {v for v, _ in field.choices}
        if allowed and (bad := [v for v in value if v not in allowed]):
            raise ValueError(f"{where}: {bad[0]!r} is not one of {sorted(allowed)}")
        count = len(value)
        if field.minimum is not None and count < field.minimum:
            raise ValueError(f"{where}: pick at least {field.minimum:g}")
        if field.maximum is not None and count > field.maximum:
            raise ValueError(f"{where}: pick at most {field.maximum:g}")
        return list(value)
    if not isinstance(value, str):
        raise ValueError(f"{where}: expected text, got {value!r}")
    if field.choices and value not in {v for v, _ in field.choices}:
        raise ValueError(f"{where}: {value!r} is not one of {[v for v, _ in field.choices]}")
    if field.min_length is not None and len(value) < field.min_length:
        raise ValueError(f"{where}: at least {field.min_length} characters")
    if field.max_length is not None and len(value) > field.max_length:
        raise ValueError(f"{where}: at most {field.max_length} characters")
    # A ``pattern`` is not checked here: an agent's regular expression could take the kernel minutes on a
    # short answer (catastrophic backtracking); the agent checks its own pattern.
    return value


def check_answer(fields: tuple[QuestionField, ...], values: Mapping[str, Any]) -> dict[str, Any]:
    """The answer to send for ``values``; ``ValueError`` naming the first field that is wrong."""
    if not isinstance(values, Mapping):
        raise ValueError(f"an answer is a mapping of field names to values, not {type(values).__name__}")
    by_name = {f.name: f for f in fields}
    unknown = [name for name in values if name not in by_name]
    if unknown:
        raise ValueError(f"field {unknown[0]!r} is not in the question (its fields: {sorted(by_name)})")
    answer: dict[str, Any] = {}
    for field in fields:
        if field.name in values and values[field.name] is not None:
            answer[field.name] = _check(field, values[field.name])
        elif field.required:
            raise ValueError(f"field {field.name!r} is required")
    return answer
