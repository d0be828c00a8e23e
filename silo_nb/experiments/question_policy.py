"""Unattended answers to an agent's questions (ACP elicitation), by field name, never by default.

- A :class:`QuestionPolicy` holds ``answers``: values by field name, the same for every question. A form
  question whose required fields all have an answer is accepted with the answers its form has fields
  for (the rest are left out); any other question is answered ``otherwise`` (``decline`` by default;
  ``cancel`` also works). A url question is never "opened" by a policy: it is answered ``otherwise``.
- Attach it with ``handle.on_elicitation(policy)`` or ``run_grid(answers=...)``; the session checks the
  values against the form before sending (a value that does not fit is declined, saying why) and
  journals the answer with ``by`` naming the rule (``sessions/session/question_desk.py``).
- Plain frozen data, so it pickles (a Dask worker receives it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from silo_nb.model import (
    AgentElicitationRequest,
    read_fields,
)

__all__ = ["QuestionPolicy"]


@dataclass(frozen=True)
class QuestionPolicy:
    """Accept a form question with ``answers`` (by field name) when they cover its required fields."""

    answers: Mapping[str, Any] = field(default_factory=dict)
    otherwise: Literal["decline", "cancel"] = "decline"

    def __post_init__(self) -> None:
        if not isinstance(self.answers, Mapping) or not all(isinstance(k, str) for k in self.answers):
            raise ValueError("answers= is a mapping of field names to values, e.g. {'confirm': True}")
        if self.otherwise not in ("decline", "cancel"):
            raise ValueError(f"otherwise={self.otherwise!r}: a question policy answers 'decline' or 'cancel'")
        object.__setattr__(self, "answers", MappingProxyType(dict(self.answers)))

    def __reduce__(self) -> tuple[Any, ...]:  # a mappingproxy does not pickle: rebuild from a dict
        return (QuestionPolicy, (dict(self.answers), self.otherwise))

    def answer(self, request: AgentElicitationRequest) -> tuple[str, Mapping[str, Any] | None, str]:
        """(action, values, the rule that decided) for one question."""
        if request.mode != "form":
            return self.otherwise, None, f"{self.otherwise}: a policy opens no links"
        fields, _ = read_fields(request.requested_schema)
        missing = [f.name for f in fields if f.required and f.name not in self.answers]
        if missing:
            return self.otherwise, None, f"{self.otherwise}: no answer for {', '.join(missing)}"
        values = {f.name: self.answers[f.name] for f in fields if f.name in self.answers}
        rule = "answers: " + (", ".join(sorted(values)) or "(no field asked)")
        return "accept", values, rule

    def __repr__(self) -> str:
        return f"QuestionPolicy(answers={dict(self.answers)!r}, otherwise={self.otherwise!r})"
