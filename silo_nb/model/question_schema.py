"""What an agent's question asks for: ACP's ``requestedSchema`` (a flat JSON schema) read leniently into
fields, and an answer checked against them before anything is sent.

- Field types: ``string`` (with ``enum`` / titled ``oneOf`` choices: a pick), ``number``, ``integer``,
  ``boolean`` and ``array`` (a multi-select of string ``enum`` / titled ``anyOf`` items), each with a
  title, a description, a default and whether it is ``required``; a property of another type is kept
  (shown, never answered). Titles and descriptions are cut at :data:`TEXT_LIMIT` characters; at most
  :data:`FIELD_LIMIT` fields are read (a schema of 10,000 properties is said, not rendered).
- Choices are bounded too: at most :data:`CHOICE_LIMIT` per field and :data:`CHOICE_TOTAL` in the whole
  form (an ``enum`` of 200,000 values would otherwise become a 20 MB dropdown); each choice's label is cut
  at :data:`LABEL_LIMIT` characters while its value stays whole (it is what the answer sends). A field
  keeps how many choices the schema listed (``choice_count``), so the cut can be said and a value past it
  is refused with a reason rather than taken as free text.
- :func:`check_answer` raises ``ValueError`` naming the field (missing, wrong type, out of range, not a
  choice) and returns the values in the shape ACP sends back (strings, numbers, booleans, string lists).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CHOICE_LIMIT",
    "CHOICE_TOTAL",
    "FIELD_LIMIT",
    "LABEL_LIMIT",
    "TEXT_LIMIT",
    "QuestionField",
    "check_answer",
    "read_fields",
]

FIELD_LIMIT = 200
TEXT_LIMIT = 500
CHOICE_LIMIT = 1000
CHOICE_TOTAL = 5000
LABEL_LIMIT = 80
KNOWN_TYPES = ("string", "number", "integer", "boolean", "array")


def _text(value: Any) -> str | None:
    return value[:TEXT_LIMIT] if isinstance(value, str) else None


def _label(text: str, limit: int = LABEL_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class QuestionField:
    """One field of a question's form."""

    name: str
    type: str
    title: str
    description: str | None = None
    required: bool = False
    default: Any = None
    choices: tuple[tuple[str, str], ...] = ()  # (value, label) for a pick or a multi-select, bounded
    choice_count: int = 0  # how many choices the schema listed (more than ``choices`` when cut)
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None

    @property
    def answerable(self) -> bool:
        return self.type in KNOWN_TYPES


def _choices(schema: Mapping[str, Any], budget: int) -> tuple[tuple[tuple[str, str], ...], int]:
    """(at most ``budget`` choices with cut labels, how many the schema listed)."""
    pairs: Iterator[tuple[str, str]]
    listed = schema.get("enum")
    if isinstance(listed, list):
        pairs = ((v, v) for v in listed if isinstance(v, str))
    else:
        listed = next((schema[k] for k in ("oneOf", "anyOf") if isinstance(schema.get(k), list)), None)
        if listed is None:
            return (), 0
        pairs = (
            (o["const"], _text(o.get("title")) or o["const"])
            for o in listed
            if isinstance(o, Mapping) and isinstance(o.get("const"), str)
        )
    # Only the kept choices are built, and the rest are not even looked at: when the cut is reached, the
    # list's length is the count (an item that is not a choice is counted then, a small overstatement).
    kept = tuple((value, _label(title)) for value, title in itertools.islice(pairs, budget))
    return kept, len(kept) if len(kept) < budget else max(len(kept), len(listed))


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
    budget = CHOICE_TOTAL
    for name, raw in list(properties.items())[:FIELD_LIMIT]:
        if not isinstance(name, str) or not isinstance(raw, Mapping):
            continue
        declared, listed = raw.get("type"), raw.get("items")
        kind: str = declared if isinstance(declared, str) else "string"
        items: Mapping[str, Any] = listed if isinstance(listed, Mapping) else {}
        length = (raw.get("minLength"), raw.get("maxLength"))
        choices, choice_count = _choices(items if kind == "array" else raw, min(CHOICE_LIMIT, budget))
        budget -= len(choices)
        fields.append(
            QuestionField(
                name=name[:TEXT_LIMIT],
                type=kind[:40],
                title=_text(raw.get("title")) or name[:TEXT_LIMIT],
                description=_text(raw.get("description")),
                required=name in required_names,
                default=raw.get("default"),
                choices=choices,
                choice_count=choice_count,
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
        if field.choice_count and (bad := [v for v in value if v not in allowed]):
            raise ValueError(_not_a_choice(where, field, bad[0]))
        count = len(value)
        if field.minimum is not None and count < field.minimum:
            raise ValueError(f"{where}: pick at least {field.minimum:g}")
        if field.maximum is not None and count > field.maximum:
            raise ValueError(f"{where}: pick at most {field.maximum:g}")
        return list(value)
    if not isinstance(value, str):
        raise ValueError(f"{where}: expected text, got {value!r}")
    if field.choice_count and value not in {v for v, _ in field.choices}:
        raise ValueError(_not_a_choice(where, field, value))
    if field.min_length is not None and len(value) < field.min_length:
        raise ValueError(f"{where}: at least {field.min_length} characters")
    if field.max_length is not None and len(value) > field.max_length:
        raise ValueError(f"{where}: at most {field.max_length} characters")
    # A ``pattern`` is not checked here: an agent's regular expression could take the kernel minutes on a
    # short answer (catastrophic backtracking); the agent checks its own pattern.
    return value


def _not_a_choice(where: str, field: QuestionField, value: str) -> str:
    """One line, however many choices there are or however long the value is."""
    got = _label(value, 80)
    if field.choice_count > len(field.choices):
        return (
            f"{where}: {got!r} is not among the {len(field.choices):,} choices offered "
            f"(the question listed {field.choice_count:,}; a form offers at most {CHOICE_LIMIT:,} a field): "
            "pick one of those, or decline"
        )
    listed = [_label(v, 40) for v, _ in field.choices[:5]]
    more = f" … ({field.choice_count:,} in all)" if field.choice_count > len(listed) else ""
    return f"{where}: {got!r} is not one of {listed}{more}"


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
