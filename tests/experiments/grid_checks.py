"""Checks shared by the grid tests: rows recounted from the journals, and agent processes still alive."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from silo_nb.acp.supervisor import process_table
from silo_nb.experiments.progress import GridCounts


def recount(journal: Path) -> dict[str, Any]:
    """A one-turn journal's counts, computed here independently of silo_nb.experiments.rows."""
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    first = next(i for i, line in enumerate(lines) if line["kind"] == "user_message_chunk")
    agent = [
        line
        for line in lines[first:]
        if not line.get("raw", {}).get("synthesized") and line["kind"] != "available_commands_update"
    ]
    calls = {
        line["toolCall"]["toolCallId"]
        for line in lines
        if "toolCall" in line and line["kind"].startswith("tool")
    }
    decisions = [line["raw"] for line in lines if line["kind"] == "permission_decision"]
    usage = [line["usage"] for line in lines if line["kind"] == "usage_update"]
    (end,) = [line["raw"] for line in lines if line["kind"] == "turn_end"]
    return {
        "updates": len(agent),
        "tool_calls": len(calls),
        "permissions_asked": sum(line["kind"] == "permission_request" for line in lines),
        "permissions_allowed": sum(
            d["optionId"] is not None and d["optionId"].startswith("allow") for d in decisions
        ),
        "tokens_used": usage[-1]["used"] if usage else None,
        "stop_reason": end["stopReason"],
        "prompt": next(line["text"] for line in lines if line["kind"] == "user_message_chunk"),
    }


def agents_with(marker: str) -> list[int]:
    """Live processes whose environment holds ``marker`` (the test's own demo state folder)."""
    found = []
    needle = marker.encode()
    for pid, state, _ppid, _pgrp in process_table() or []:
        if state == b"Z" or pid == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if needle in environ and b"silo_nb_agents.demo" in cmdline:
            found.append(pid)
    return found


class Recorder:
    """A progress sink that keeps every count it is shown."""

    def __init__(self) -> None:
        self.seen: list[GridCounts] = []

    def started(self, counts: GridCounts) -> None:
        self.seen.append(counts)

    changed = finished = started


TASK = Path(__file__).resolve().parents[2] / "notebooks" / "data" / "stats-task"
TASKS = ["mean", "median", "mode", "variance"]
FIX_PROMPTS = [f"fix {name} in stats.py" for name in TASKS]
MODELS = [{"model": "demo-fast"}, {"model": "demo-smart"}]


def check_argv(run: Any) -> list[str]:
    """The stats task's own check of the function the cell's prompt asked to fix."""
    return [sys.executable, "check.py", TASKS[run.prompt_index]]


def demo_env(monkeypatch: Any, state: Path) -> Path:
    """A private demo state folder (also the marker that finds a test's agent processes)."""
    monkeypatch.setenv("SILO_NB_DEMO_STATE_DIR", str(state))
    monkeypatch.setenv("SILO_NB_DEMO_DELAY", "0")
    monkeypatch.delenv("SILO_NB_PROFILES", raising=False)
    return state


def diff_counts(diff: str) -> dict[str, int]:
    """files changed, lines added and removed, counted from a unified diff's text (not from silo_nb)."""
    files = {line[6:] for line in diff.splitlines() if line.startswith("+++ b/")}
    files |= {line[6:] for line in diff.splitlines() if line.startswith("--- a/")}
    body = [line for line in diff.splitlines() if not line.startswith(("+++", "---"))]
    return {
        "files_changed": len(files),
        "lines_added": sum(line.startswith("+") for line in body),
        "lines_removed": sum(line.startswith("-") for line in body),
    }
