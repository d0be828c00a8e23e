"""Scorers: scores and diffs that match an independent recount, and scorers that raise, hang or flood."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pandas as pd
import pytest

import silo_nb
from silo_nb.acp.supervisor import process_table
from silo_nb.experiments import GridRun, command_scorer, run_grid
from silo_nb.experiments.scorers import OUTPUT_KEEP, check_scorers, score_run
from tests.experiments.grid_checks import (
    FIX_PROMPTS,
    MODELS,
    TASK,
    agents_with,
    check_argv,
    demo_env,
    diff_counts,
)

ALLOW = silo_nb.PermissionPolicy("allow *")


def a_run(workdir: Path, **fields: Any) -> GridRun:
    journal = workdir / "journal.jsonl"
    journal.write_text("")
    values: dict[str, Any] = {
        "cell": "p0-demo-c0-r0",
        "profile": "demo",
        "variant": "defaults",
        "config": {},
        "prompts": ("hello",),
        "prompt_index": 0,
        "repeat": 0,
        "workdir": workdir,
        "journal": journal,
        "final_text": "all done",
        **fields,
    }
    return GridRun(**values)


def score(scorers: dict[str, Any], run: GridRun, timeout: float = 5.0) -> Any:
    return anyio.run(lambda: score_run(scorers, run, timeout=timeout))


def test_the_stats_grid_scores_and_diffs_match_an_independent_recount(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = demo_env(monkeypatch, tmp_path / "demo-state")
    df = anyio.run(
        lambda: run_grid(
            FIX_PROMPTS,
            configs=MODELS,
            repeats=2,
            policy=ALLOW,
            template=TASK,
            folder=tmp_path / "runs",
            name="stats",
            config_dirs=[],
            progress=False,
            scorers={"tests": command_scorer(check_argv), "says_done": lambda run: "done" in run.final_text},
        )
    )
    folder = Path(df.attrs["run_folder"])
    assert len(df) == 16 and (df["cell_status"] == "finished").all() and df["score_error"].isna().all()
    for row in df.to_dict("records"):
        cell = row["cell"]
        diff = (folder / "diffs" / f"{cell}.diff").read_text()
        assert diff_counts(diff) == {k: row[k] for k in ("files_changed", "lines_added", "lines_removed")}, (
            cell
        )
        # Recount the score: the template, the saved diff applied by git apply, the task's own check.
        copy = tmp_path / "recount" / cell
        shutil.copytree(TASK, copy)
        subprocess.run(["git", "apply", "-p1", "-"], input=diff.encode(), cwd=copy, check=True)
        argv = check_argv(SimpleNamespace(prompt_index=row["prompt_index"]))
        passed = subprocess.run(argv, cwd=copy, capture_output=True, check=False).returncode == 0
        assert bool(row["score.tests"]) is passed, cell
    by_model = df.groupby("model")["score.tests"].mean().to_dict()
    assert by_model == {"demo-fast": 0.5, "demo-smart": 1.0}  # the smart model really does better
    assert df["score.says_done"].all() and str(df["score.tests"].dtype) == "boolean"
    assert agents_with(str(state)) == []


def test_a_scorer_that_raises_or_returns_nonsense_gives_nan_and_the_reason(tmp_path: Path) -> None:
    def exits(run: GridRun) -> bool:
        raise SystemExit(3)

    sheet = score(
        {
            "boom": lambda run: 1 / 0,
            "exits": exits,
            "text": lambda run: "yes",
            "parts": lambda run: {"passed": 3, "ok": True},
            "fine": lambda run: 0.75,
        },
        a_run(tmp_path),
    )
    assert sheet.values == {
        "boom": None,
        "exits": None,
        "text": None,
        "parts.passed": 3.0,
        "parts.ok": True,
        "fine": 0.75,
    }
    assert sheet.errors == {
        "boom": "ZeroDivisionError: division by zero",
        "exits": "SystemExit: 3",
        "text": "TypeError: returned str — a scorer returns a number, a bool or a dict of them",
    }


def test_scorers_that_hang_are_bounded_and_the_next_one_still_runs(tmp_path: Path) -> None:
    release = threading.Event()

    async def forever(run: GridRun) -> bool:
        await anyio.sleep_forever()
        return True

    try:
        sheet = score(
            {
                "thread": lambda run: release.wait(60),
                "coroutine": forever,
                "command": command_scorer(
                    [sys.executable, "-c", "import time; time.sleep(600)"], timeout=0.5
                ),
                "after": lambda run: True,
            },
            a_run(tmp_path),
            timeout=0.5,
        )
    finally:
        release.set()  # the abandoned thread may end now
    assert sheet.values == {"thread": None, "coroutine": None, "command": None, "after": True}
    assert sheet.errors == {
        "thread": "timed out after 0.5 s",
        "coroutine": "timed out after 0.5 s",
        "command": "timed out after 0.5 s",
    }
    assert sheet.outputs["command"]["timed_out"] is True and sheet.outputs["command"]["exit_code"] is None
    sleepers = [
        pid
        for pid, state, _ppid, _pgrp in process_table() or []
        if state != b"Z" and b"time.sleep(600)" in _cmdline(pid)
    ]
    assert sleepers == []  # its process group was killed


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_a_command_that_prints_a_gigabyte_keeps_a_bounded_head_and_tail(tmp_path: Path) -> None:
    flood = (
        "import sys\n"
        "sys.stdout.write('first line\\n')\n"
        "block = b'x' * (1 << 20)\n"
        "for _ in range(1024): sys.stdout.buffer.write(block)\n"
        "sys.stdout.write('\\nlast line\\n')\n"
    )
    sheet = score({"flood": command_scorer([sys.executable, "-c", flood], timeout=120)}, a_run(tmp_path), 120)
    output = sheet.outputs["flood"]
    assert sheet.values == {"flood": True} and not sheet.errors
    assert output["output_bytes"] == (1 << 30) + len("first line\n") + len("\nlast line\n")
    assert output["output_cut"] is True and len(output["output"].encode()) < 2 * OUTPUT_KEEP + 200
    assert output["output"].startswith("first line\n") and output["output"].endswith("last line\n")
    assert "bytes of output left out" in output["output"]


def test_a_command_scorer_gets_the_cell_in_its_environment_and_fails_on_nonzero(tmp_path: Path) -> None:
    show = "import os, sys; print(os.environ['SILO_GRID_CELL'], os.getcwd()); sys.exit(int(sys.argv[1]))"
    sheet = score(
        {
            "ok": command_scorer([sys.executable, "-c", show, "0"]),
            "bad": command_scorer([sys.executable, "-c", show, "4"]),
            "missing": command_scorer(["no-such-command-here"]),
        },
        a_run(tmp_path, cell="p3-demo-c1-r2"),
    )
    assert sheet.values == {"ok": True, "bad": False, "missing": None}
    assert sheet.outputs["ok"]["output"] == f"p3-demo-c1-r2 {os.path.realpath(tmp_path)}\n"
    assert sheet.outputs["bad"]["exit_code"] == 4
    assert sheet.errors == {
        "missing": "command not found: 'no-such-command-here' — give its full path or put it on the PATH"
    }


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"has space": lambda run: 1}, "Scorer name 'has space'"),
        ({"x": 3}, "Scorer 'x' is int, not a function of the run."),
        ([lambda run: 1], "scorers= takes a dict of name → scorer"),
    ],
)
def test_bad_scorers_are_refused_before_anything_runs(given: Any, says: str) -> None:
    with pytest.raises((ValueError, TypeError), match=says):
        check_scorers(given)
    with pytest.raises(ValueError, match="command_scorer takes the command as a list"):
        command_scorer("pytest -q")  # type: ignore[arg-type]


def test_score_columns_are_nullable_bools_or_floats() -> None:
    from silo_nb.experiments.table import rows_to_frame

    base = {"config": {}, "tools_by_kind": {}, "tools_by_status": {}, "started": None}
    table = rows_to_frame(
        [{**base, "score.ok": True, "score.n": 2.0}, {**base, "score.ok": None, "score.n": None}], pd
    )
    assert str(table["score.ok"].dtype) == "boolean" and table["score.ok"].isna().tolist() == [False, True]
    assert str(table["score.n"].dtype) == "float64" and table["score.n"].isna().tolist() == [False, True]
