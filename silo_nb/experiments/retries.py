"""``run_grid(retry=...)``: a failed cell runs again, but only for the error classes asked for.

- Every failed cell gets one class (:data:`ERROR_CLASSES`, column ``error_class``):

  ``timeout``       the cell's ``timeout=`` ran out (``grid_cell`` says so itself), or the agent left
                    a request unanswered past its profile's ``request_timeout`` (it hung).
  ``rate_limited``  the agent's error says rate limit / 429 / overloaded / too many requests — what the
                    Claude and OpenAI APIs answer, and what ACP adapters pass on as a JSON-RPC error
                    (claude-agent-acp forwards the API's ``rate_limit_error`` / ``overloaded_error``).
  ``crashed``       the agent's process ended: it exited before answering (connect) or during a turn
                    (``agent exited with code N``, the connection closed, no longer connected).
  ``refused``       the agent answered with any other error (a bad request, a sign-in it wants): running
                    it again would get the same answer.
  ``other``         anything else (the executor's own failure, a config option the agent refused…).

  The first class that matches wins, in that order (a process that printed "429" and died is
  ``rate_limited``: a retry after a pause is what it needs). Only ``crashed``, ``timeout`` and
  ``rate_limited`` may be retried (:data:`RETRY_CLASSES`); ``refused`` and ``other`` never are.
- Each attempt is kept: the final one is the cell's done record (so resume, rescore, reports, diffs and
  the summaries see one result per cell, as before), the earlier ones move under ``attempts/`` of the
  run's folder (``attempts/cells/<cell>.a<n>.json`` and its journal, diff and scores beside it). The run's
  frame has a row for each (columns ``attempt``, ``final``); ``summarize``/``cells_frame`` keep only
  the final ones. Budgets: the grid's ``budget=`` counts the tokens and cost of every attempt (they
  were spent), and a retry is not started once it is spent.
- A resumed run (the same ``run_grid`` call again) retries a failed cell whose class still has
  attempts left, counting the attempts already on disk — a kernel restart mid-retry loses nothing.
- ``rate_limited`` waits before its retry: ``retry_backoff`` seconds, doubled per retry of the cell,
  at most :data:`MAX_BACKOFF`; the cell's concurrency slot is given up meanwhile.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping
from typing import Any

from silo_nb.experiments.run_folder import RunFolder
from silo_nb.sessions import check_folder

__all__ = [
    "ERROR_CLASSES",
    "MAX_BACKOFF",
    "RETRY_CLASSES",
    "attempt_number",
    "attempts_folder",
    "backoff_seconds",
    "check_retry",
    "error_class",
    "retry_wanted",
    "set_attempt_aside",
    "spent_by",
]

ERROR_CLASSES = ("timeout", "rate_limited", "crashed", "refused", "other")
RETRY_CLASSES = ("crashed", "timeout", "rate_limited")
MAX_BACKOFF = 60.0
_MAX_RETRIES = 100  # per class: a typo like 1e9 should not loop for ever

_RATE_LIMITED = re.compile(
    r"rate[ _-]?limit|\b429\b|overloaded|too many requests|resource[ _]exhausted|quota exceeded", re.I
)
_CRASHED = re.compile(
    r"agent exited|exited with code|connection closed|no longer connected|killed by signal|"
    r"supervisor exited|broken pipe",
    re.I,
)
_TIMED_OUT = re.compile(r"^timed out after |; timed out after | did not answer \S+ within ")
_AGENT_SAID = re.compile(r"^(The prompt turn failed|.* could not (start a session|sign in))", re.I)


def check_retry(retry: Mapping[str, int] | None) -> dict[str, int]:
    """``retry=`` checked: error class → extra attempts (0 to 100). One line naming the classes if not."""
    if retry is None:
        return {}
    classes = ", ".join(RETRY_CLASSES)
    if not isinstance(retry, Mapping):
        raise TypeError(
            f"retry= takes a dict of error class → extra attempts, e.g. {{'crashed': 2}} ({classes})."
        )
    checked: dict[str, int] = {}
    for key, value in retry.items():
        if key not in RETRY_CLASSES:
            never = " (never retried: the same input gets the same answer)" if key in ERROR_CLASSES else ""
            raise ValueError(f"retry= has no error class {key!r}{never} — retry one of: {classes}.")
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_RETRIES:
            raise ValueError(f"retry {key}={value!r} — give how many extra attempts, 0 to {_MAX_RETRIES}.")
        checked[key] = value
    return checked


def check_backoff(seconds: float) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds <= MAX_BACKOFF:
        raise ValueError(
            f"retry_backoff={seconds!r} — give the seconds before a rate-limited retry, 0 to 60."
        )
    return float(seconds)


def error_class(error: str | None, *, timed_out: bool = False, agent_gone: bool = False) -> str | None:
    """The class of a cell's error (see the module docstring); None when there is no error. ``timed_out``
    and ``agent_gone`` are what the cell saw itself; without them (a record written before classes were
    recorded) the error's words decide."""
    if not error:
        return None
    if timed_out or _TIMED_OUT.search(error):
        return "timeout"
    if _RATE_LIMITED.search(error):
        return "rate_limited"
    if agent_gone or _CRASHED.search(error):
        return "crashed"
    if _AGENT_SAID.match(error):
        return "refused"
    return "other"


def record_class(record: Mapping[str, Any]) -> str | None:
    """A done record's error class: the one it recorded, else from its error's words."""
    if record.get("status") != "failed":
        return None
    known = record.get("error_class")
    return (
        known
        if isinstance(known, str) and known in ERROR_CLASSES
        else error_class(record.get("error") or "?")
    )


def retry_wanted(record: Mapping[str, Any], retry: Mapping[str, int]) -> bool:
    """Whether this failed attempt is retried: its class is in ``retry`` with attempts left."""
    kind = record_class(record)
    if kind is None or kind not in retry:
        return False
    used = (record.get("retries") or {}).get(kind, 0)
    return isinstance(used, int) and used < retry[kind]


def next_retries(record: Mapping[str, Any]) -> dict[str, int]:
    """The retry counts the next attempt of the cell carries (this attempt's class counted)."""
    counts = {k: v for k, v in (record.get("retries") or {}).items() if isinstance(v, int)}
    kind = record_class(record)
    if kind is not None:
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def backoff_seconds(base: float, retries: Mapping[str, int]) -> float:
    """The wait before a rate-limited cell's next attempt: ``base`` doubled per earlier rate-limited retry."""
    done = max(0, int(retries.get("rate_limited", 1)) - 1)
    return float(min(MAX_BACKOFF, base * (2 ** min(done, 16))))


def attempts_folder(run: RunFolder) -> RunFolder:
    """The folder of a run's earlier attempts, laid out as a run (``cells/``, ``journals/``…) with cells
    named ``<cell>.a<n>``."""
    path = run.path / "attempts"
    check_folder(path, run.path)
    return RunFolder(path, run.name, ())


def attempt_number(record: Mapping[str, Any]) -> int:
    """Which attempt a done record is (1 for a record written before retries existed)."""
    number = record.get("attempt")
    return number if isinstance(number, int) and not isinstance(number, bool) and number >= 1 else 1


def attempt_name(cell: str, attempt: int) -> str:
    return f"{cell}.a{attempt}"


def set_attempt_aside(run: RunFolder, cell: str, attempt: int) -> None:
    """Move the cell's current (failed) attempt under ``attempts/`` as ``<cell>.a<attempt>``: its files
    first, its record last — a crash in between leaves the cell's record, so the move is done again."""
    aside = attempts_folder(run)
    name = attempt_name(cell, attempt)
    pairs = [
        (run.journal_path(cell), aside.journal_path(name)),
        (run.diff_path(cell), aside.diff_path(name)),
        (run.changes_path(cell), aside.changes_path(name)),
        (run.scores_path(cell), aside.scores_path(name)),
        (run.record_path(cell), aside.record_path(name)),
    ]
    for source, target in pairs:
        check_folder(target.parent, run.path)
        with contextlib.suppress(FileNotFoundError):
            os.rename(source, target)


def earlier_attempts(run: RunFolder, cell: str, final: Mapping[str, Any]) -> list[tuple[RunFolder, str]]:
    """The cell's earlier attempts as (folder, name) pairs, oldest first (none when it ran once)."""
    count = attempt_number(final)
    if count <= 1 or not (run.path / "attempts").is_dir():
        return []
    aside = RunFolder(run.path / "attempts", run.name, ())
    return [(aside, attempt_name(cell, n)) for n in range(1, count) if aside.record(attempt_name(cell, n))]


def spent_by(run: RunFolder, cell: str, final: Mapping[str, Any] | None) -> list[Any]:
    """The usage of each attempt of a done cell, for the grid's budget on resume; none for a cell not
    done or cached (reusing it spent nothing)."""
    if final is None or final.get("cached_from"):
        return []
    earlier = [aside.record(name) or {} for aside, name in earlier_attempts(run, cell, final)]
    return [record.get("usage") for record in [*earlier, final]]
