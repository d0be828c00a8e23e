"""Unattended permission policies: answer an agent's permission requests by rule, never by default.

- A :class:`PermissionPolicy` is an ordered list of :class:`Rule` s plus ``otherwise``. A rule matches
  on the tool call's kind (``read``, ``edit``, ``execute``…; ``*`` any), on where its paths are
  (``inside`` / ``outside`` the session's cwd; a call that names no path is neither, so it never
  matches a rule about place), and answers ``allow`` (the least lasting allow offered: ``allow_once``
  before ``allow_always``), ``reject`` (``reject_once`` before ``reject_always``), an exact option kind
  (``allow_always``…) or ``cancel``. A rule whose answer the request does not offer does not match.
- The first matching rule decides; otherwise ``otherwise`` does (``cancel`` by default). Nothing is
  approved unless a rule says so.
- Code is guarded: a request to run code in the kernel (kind ``code``: the kernel tools' ``run_code``) is
  allowed only by a rule that names ``code`` (``"allow code"``); ``*`` and ``otherwise`` may reject or
  cancel it, never allow it. A policy that does not mention code never runs any.
- A write that runs code counts as ``code`` too: silo_nb's own request before such a write through the
  client (``rawInput.runsCode``, ``sessions/session/client_files.py``), and an agent's ``edit`` or ``move``
  of a file on ``sessions/code_targets.py``'s list (``.git/config``, an executable hook,
  ``ipython_config.py``…). ``allow edit`` and ``allow *`` do not allow it; ``allow code`` does.
- Cells are guarded the same way: a change to the open notebook (the cell tools' ``insert_cell``,
  ``edit_cell``…: ``rawInput.notebookCell``) is allowed only by a rule naming ``cells`` (``"allow
  cells"``); ``run_cell`` is ``code``.
- Attach it with ``handle.on_permission(policy)`` or ``run_grid(policy=...)``: the session journals
  the decision like a human's, with ``decidedBy`` naming the rule (``sessions/session/permission_desk.py``).
- Rules can be written as text: ``"allow read"``, ``"reject edit outside"``, ``"cancel *"``.
- Policies are plain frozen data, so they pickle (a Dask worker receives them).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from silo_nb.model import (
    AgentPermissionRequest,
)
from silo_nb.sessions import (
    runs_code,
)

__all__ = ["GUARDED_KINDS", "PermissionPolicy", "Rule"]

Where = Literal["inside", "outside"]
_ANSWERS = {
    "allow": ("allow_once", "allow_always"),
    "reject": ("reject_once", "reject_always"),
    "cancel": (),
}
_PATH_KEYS = ("path", "file_path", "filePath", "abs_path", "notebook_path")
# Kinds only a rule naming them may allow (never ``*`` nor ``otherwise``).
# ``cells``: a change to the open notebook's cells (the cell tools: "allow cells" by name).
GUARDED_KINDS = frozenset({"code", "cells"})


@dataclass(frozen=True)
class Rule:
    """``answer`` requests for tool calls of ``tool_kind`` (None/``*``: any) whose paths are ``where``."""

    answer: str
    tool_kind: str | tuple[str, ...] | None = None
    where: Where | None = None

    def __post_init__(self) -> None:
        if not self.answer or not (self.answer in _ANSWERS or "_" in self.answer):
            raise ValueError(
                f"Unknown permission answer {self.answer!r} — use allow, reject, cancel or an option kind "
                "such as allow_always."
            )
        if self.where not in (None, "inside", "outside"):
            raise ValueError(f"where={self.where!r} — use 'inside' or 'outside' (the session's cwd).")

    @classmethod
    def parse(cls, text: str) -> Rule:
        """``"ANSWER [KIND|*] [inside|outside]"``, e.g. ``"reject edit outside"``."""
        words = text.split()
        if not 1 <= len(words) <= 3:
            raise ValueError(
                f"Cannot read the rule {text!r} — write e.g. 'allow read' or 'reject edit outside'."
            )
        where = words[-1] if len(words) > 1 and words[-1] in ("inside", "outside") else None
        kinds = words[1 : len(words) - (where is not None)]
        kind = None if not kinds or kinds[0] == "*" else tuple(kinds[0].split(","))
        return cls(words[0], kind, where)  # type: ignore[arg-type]  # checked in __post_init__

    def __str__(self) -> str:
        kinds = self.tool_kind if isinstance(self.tool_kind, tuple) else (self.tool_kind or "*",)
        return " ".join([self.answer, ",".join(kinds), *([self.where] if self.where else [])])

    def option_for(self, request: AgentPermissionRequest, cwd: str) -> tuple[bool, str | None]:
        """(matches, option id to choose — None means cancel)."""
        kinds = (self.tool_kind,) if isinstance(self.tool_kind, str) else self.tool_kind
        call_kinds = request_kinds(request, cwd)
        if kinds is not None and "*" not in kinds and not call_kinds.intersection(kinds):
            return False, None
        guarded = call_kinds & GUARDED_KINDS
        named = kinds is not None and bool(guarded.intersection(kinds))
        if guarded and not named and self.answer.startswith("allow"):
            return False, None  # code runs only where a rule says so by name
        if self.where is not None:
            inside = paths_inside(request, cwd)
            if inside is None or inside != (self.where == "inside"):
                return False, None
        if self.answer == "cancel":
            return True, None
        for option_kind in _ANSWERS.get(self.answer, (self.answer,)):
            for option in request.options:
                if option.kind == option_kind:
                    return True, option.option_id
        return False, None


@dataclass(frozen=True)
class PermissionPolicy:
    """Ordered rules; the first that matches answers, else ``otherwise`` (``cancel``)."""

    rules: tuple[Rule, ...] = ()
    otherwise: str = "cancel"
    name: str = "policy"

    def __init__(
        self,
        *rules: Rule | str | Mapping[str, Any] | Iterable[Rule | str],
        otherwise: str = "cancel",
        name: str = "policy",
    ) -> None:
        flat: list[Rule] = []
        for item in rules:
            items = item if isinstance(item, list | tuple) else (item,)
            for rule in items:
                if isinstance(rule, Rule):
                    flat.append(rule)
                elif isinstance(rule, str):
                    flat.append(Rule.parse(rule))
                elif isinstance(rule, Mapping):
                    flat.append(Rule(**rule))
                else:
                    raise TypeError(
                        f"A policy rule is a Rule, a string or a dict — not {type(rule).__name__}."
                    )
        Rule(otherwise)  # validates the answer
        object.__setattr__(self, "rules", tuple(flat))
        object.__setattr__(self, "otherwise", otherwise)
        object.__setattr__(self, "name", name)

    def decide(self, request: AgentPermissionRequest, cwd: str) -> tuple[str | None, str]:
        """The option id to choose (None: cancel) and the reason, journaled as ``decidedBy``."""
        for number, rule in enumerate(self.rules, start=1):
            matches, option_id = rule.option_for(request, cwd)
            if matches:
                return option_id, f"{self.name} rule {number}: {rule}"
        matches, option_id = Rule(self.otherwise).option_for(request, cwd)
        return (option_id if matches else None), f"{self.name} otherwise: {self.otherwise}"

    def __repr__(self) -> str:
        rules = ", ".join(repr(str(rule)) for rule in self.rules)
        return f"PermissionPolicy({rules}{', ' if rules else ''}otherwise={self.otherwise!r})"


def request_kinds(request: AgentPermissionRequest, cwd: str) -> frozenset[str | None]:
    """The kinds a rule may match the request by: the tool call's, plus ``code`` for a write that runs
    code (see the module docstring); none without a tool call."""
    call = request.tool_call
    if call is None:
        return frozenset()
    raw_input = call.raw_input if isinstance(call.raw_input, Mapping) else {}
    if raw_input.get("runsCode") or (call.kind in ("edit", "move") and _names_code(request, cwd)):
        return frozenset({call.kind, "code"})
    if raw_input.get("notebookCell") is True:
        return frozenset({call.kind, "cells"})
    return frozenset({call.kind})


def _names_code(request: AgentPermissionRequest, cwd: str) -> bool:
    root = os.path.realpath(cwd)
    for path in request_paths(request):
        try:
            full = os.path.realpath(os.path.join(root, os.path.expanduser(path)))
        except (ValueError, OSError):
            continue  # names no file (a NUL): it is outside, so no "inside" rule allows it anyway
        mode = None
        with contextlib.suppress(OSError):
            mode = os.stat(full).st_mode
        if runs_code(Path(full), mode) is not None:
            return True
    return False


def request_paths(request: AgentPermissionRequest) -> list[str]:
    """The paths a permission request is about: the tool call's locations, diffs and path-like inputs."""
    call = request.tool_call
    if call is None:
        return []
    paths = [location.path for location in call.locations or ()]
    paths += [item.path for item in call.content or () if item.path]
    if isinstance(call.raw_input, Mapping):
        paths += [str(call.raw_input[k]) for k in _PATH_KEYS if isinstance(call.raw_input.get(k), str)]
    return paths


def paths_inside(request: AgentPermissionRequest, cwd: str) -> bool | None:
    """True if every path is inside ``cwd`` (symlinks resolved), False if any is outside, None if none."""
    paths = request_paths(request)
    if not paths:
        return None
    root = os.path.realpath(cwd)
    for path in paths:
        if "\x00" in path:
            return False  # names no file; outside, so no "inside" rule can allow it (realpath raises)
        try:
            full = os.path.realpath(os.path.join(root, os.path.expanduser(path)))
        except (ValueError, OSError):
            return False
        if os.path.commonpath([root, full]) != root:
            return False
    return True
