"""The demo agent's one coding task: "fix FUNCTION in FILE.py", done better by the smart model.

- A ``fix`` prompt names a Python file of the session's working directory (``stats.py`` when it names
  none) and one of the functions in :data:`SOLUTIONS`. The turn reads the file, replaces that function's
  ``def`` block (from its ``def`` line to the next line that starts at column 0) with the model's
  version, and writes it once the client allowed the edit, like the ``notes.md`` edit (notes.py).
- Each function has two scripted versions. ``demo-smart`` writes a correct one every time; ``demo-fast``
  gets ``mean`` and ``mode`` right and writes the classic slips for ``median`` (no sort, no even case)
  and ``variance`` (divides by n). So a test of the task passes for the smart model and fails for the
  fast one on half the functions, deterministically: the same prompt always gets the same code.
- The smart model also reads more, so it costs more (:func:`fix_tokens`): a grid shows the trade-off.
- Standard library only; plain blocking file calls of a small file, like notes.py.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Final

from silo_nb_agents.demo.notes import apply_text_edit, read_small_text

DEFAULT_FILE: Final = "stats.py"
SMART_MODEL: Final = "demo-smart"

_MEAN = "def mean(values):\n    return sum(values) / len(values)\n"
_MODE = (
    "def mode(values):\n"
    "    counts = {}\n"
    "    for value in values:\n"
    "        counts[value] = counts.get(value, 0) + 1\n"
    "    return min(counts, key=lambda value: (-counts[value], value))\n"
)
_FAST_MEDIAN = "def median(values):\n    return values[len(values) // 2]\n"
_SMART_MEDIAN = (
    "def median(values):\n"
    "    ordered = sorted(values)\n"
    "    middle = len(ordered) // 2\n"
    "    if len(ordered) % 2:\n"
    "        return ordered[middle]\n"
    "    return (ordered[middle - 1] + ordered[middle]) / 2\n"
)
_FAST_VARIANCE = (
    "def variance(values):\n"
    "    average = sum(values) / len(values)\n"
    "    return sum((value - average) ** 2 for value in values) / len(values)\n"
)
_SMART_VARIANCE = (
    "def variance(values):\n"
    '    """The sample variance (n - 1 in the denominator)."""\n'
    "    average = sum(values) / len(values)\n"
    "    return sum((value - average) ** 2 for value in values) / (len(values) - 1)\n"
)

# function -> (demo-fast's version, demo-smart's version)
SOLUTIONS: Final[dict[str, tuple[str, str]]] = {
    "mean": (_MEAN, _MEAN),
    "median": (_FAST_MEDIAN, _SMART_MEDIAN),
    "mode": (_MODE, _MODE),
    "variance": (_FAST_VARIANCE, _SMART_VARIANCE),
}

_PY_FILE = re.compile(r"[\w.-]+\.py\b")


@dataclass(frozen=True)
class FixPlan:
    """What a fix turn found and proposes (``problem``: why nothing can be proposed)."""

    path: str
    function: str
    old_text: str | None
    new_text: str
    problem: str | None = None


def fix_tokens(model: str, step: str) -> int:
    """The tokens one step of a fix turn costs: the smart model reads and thinks three times as much."""
    base = {"read": 900, "edit": 500, "reply": 300}.get(step, 300)
    return base * 3 if model == SMART_MODEL else base


def _target(prompt: str) -> tuple[str, str | None]:
    names = _PY_FILE.findall(prompt)
    file_name = os.path.basename(names[0]) if names else DEFAULT_FILE
    words = set(re.findall(r"\w+", prompt.lower()))
    function = next((name for name in SOLUTIONS if name in words), None)
    return file_name, function


def _replace_function(text: str, function: str, code: str) -> str | None:
    """``text`` with ``def function(`` … block replaced by ``code``; None when there is no such def."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.startswith(f"def {function}(")), None)
    if start is None:
        return None
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][0] in " \t"):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():  # keep the blank lines after the block
        end -= 1
    return "".join(lines[:start]) + code + "".join(lines[end:])


def plan_fix(cwd: str, prompt: str, model: str) -> FixPlan:
    """Read the file and propose the model's version of the function (nothing is written here)."""
    file_name, function = _target(prompt)
    path = os.path.join(cwd, file_name)
    if function is None:
        known = ", ".join(f"`{name}`" for name in SOLUTIONS)
        return FixPlan(path, "", None, "", f"name the function to fix ({known})")
    text, problem = read_small_text(path, file_name)
    if problem is None and text is None:
        problem = f"there is no {file_name} in the working directory"
    if problem is not None or text is None:
        return FixPlan(path, function, None, "", problem)
    fast, smart = SOLUTIONS[function]
    new_text = _replace_function(text, function, smart if model == SMART_MODEL else fast)
    if new_text is None:
        return FixPlan(path, function, text, "", f"{file_name} has no function `{function}`")
    return FixPlan(path, function, text, new_text)


def apply_fix(plan: FixPlan) -> str | None:
    """Write an allowed fix; None when done, else why nothing was written (one line)."""
    return apply_text_edit(plan.path, plan.old_text, plan.new_text, os.path.basename(plan.path))
