"""``run_grid(retry=, cache=)`` on real agent subprocesses: retries by error class, each attempt a row and
only the final one counted; cached cells reused across runs without starting an agent."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pandas as pd
import pytest

import silo_nb
from silo_nb.experiments import run_grid
from silo_nb.experiments.grid_cache import CellCache, cell_key, scorer_identity
from silo_nb.experiments.grid_cell import CellSpec
from silo_nb.experiments.retries import ERROR_CLASSES, error_class
from silo_nb.experiments.run_folder import RunFolder
from silo_nb.experiments.summary import cells_frame
from silo_nb.notebook.results.loaded_run import LoadedRun
from tests.experiments.grid_checks import Recorder
from tests.support.profiles import toml_profile, write_toml

FLAKY = Path(__file__).resolve().parents[1] / "agents" / "flaky_agent.py"
# A demo agent that first appends a line to the file named by argv[1]: the test counts its starts.
COUNTED_DEMO = (
    "import os, sys; open(sys.argv[1], 'a').write('start\\n'); "
    "os.execv(sys.executable, [sys.executable, '-m', 'silo_nb_agents.demo'])"
)


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private data dir (the cache's index) and demo state; profiles for each way to fail."""
    monkeypatch.setenv("SILO_NB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SILO_NB_DEMO_STATE_DIR", str(tmp_path / "demo-state"))
    monkeypatch.setenv("SILO_NB_DEMO_DELAY", "0")
    monkeypatch.delenv("SILO_NB_PROFILES", raising=False)
    text = ""
    for mode, bad in [("crash", 1), ("crash-start", 1), ("rate-limit", 2), ("hang", 1), ("refuse", 1)]:
        text += toml_profile(
            mode, command=sys.executable, args=[str(FLAKY), mode, str(tmp_path / mode), str(bad)]
        )
    for name, mode, bad in [
        ("crash-always", "crash", 99),
        ("refuse-always", "refuse", 99),
        ("hang-twice", "hang", 2),
    ]:
        args = [str(FLAKY), mode, str(tmp_path / name), str(bad)]
        text += toml_profile(name, command=sys.executable, args=args)
    text += toml_profile(
        "counted", command=sys.executable, args=["-c", COUNTED_DEMO, str(tmp_path / "demo-starts")]
    )
    write_toml(tmp_path / "cfg", text)
    yield tmp_path


def starts(place: Path, name: str) -> int:
    path = place / name / "starts" if name != "demo-starts" else place / name
    return len(path.read_text().splitlines()) if path.exists() else 0


def grid(place: Path, profiles: list[str], **options: Any) -> Any:
    options = {"timeout": 30.0, "progress": False, "retry_backoff": 0.01, **options}
    return anyio.run(
        lambda: run_grid(
            ["hi"], profiles=profiles, folder=place / "runs", config_dirs=[place / "cfg"], **options
        )
    )


def passed(run: Any) -> bool:
    return bool(run.status == "finished")


def test_a_crash_once_agent_retried_once_gives_two_rows_and_counts_once(place: Path) -> None:
    recorder = Recorder()
    df = grid(place, ["crash"], retry={"crashed": 1}, scorers={"ok": passed}, progress=recorder)
    assert starts(place, "crash") == 2
    assert list(df["attempt"]) == [1, 2] and list(df["final"]) == [False, True]
    assert list(df["cell_status"]) == ["failed", "finished"]
    assert df["error_class"].iloc[0] == "crashed" and pd.isna(df["error_class"].iloc[1])
    assert "agent exited with code 3" in df["error"].iloc[0] and df["text"].iloc[1] == "done 2"
    assert list(df["score.ok"]) == [False, True]  # each attempt was scored where it ran
    summary = silo_nb.summarize(df)
    assert summary["n"].tolist() == [1] and summary["ok_pass_rate"].tolist() == [1.0]
    assert summary["ok_n"].tolist() == [1] and summary["ok_pass@1"].tolist() == [1.0]
    assert len(cells_frame(df)) == 1 and recorder.seen[-1].failed == 0 and recorder.seen[-1].done == 1
    folder = Path(df.attrs["run_folder"])
    assert json.loads((folder / "cells" / "p0-crash-c0-r0.json").read_text())["attempt"] == 2
    assert (folder / "attempts" / "cells" / "p0-crash-c0-r0.a1.json").is_file()
    pd.testing.assert_frame_equal(silo_nb.frame(folder), df)  # rebuilt from the folder alone
    # Called again, the finished cell is skipped: no start, the same rows.
    again = grid(place, ["crash"], retry={"crashed": 1}, scorers={"ok": passed})
    assert starts(place, "crash") == 2
    pd.testing.assert_frame_equal(again, df)
    rescored = anyio.run(lambda: silo_nb.rescore(folder, {"again": passed}))  # the final attempt only
    assert rescored["score.again"].isna().tolist() == [True, False] and bool(rescored["score.again"].iloc[1])
    assert len(LoadedRun.load(folder).cells) == 1  # show / report: one cell


def test_each_retried_class_by_its_own_cause(place: Path) -> None:
    retry = {"crashed": 1, "timeout": 1, "rate_limited": 3}
    df = grid(place, ["crash-start", "hang", "rate-limit"], retry=retry, timeout=4.0)
    by_cell = {cell: group for cell, group in df.groupby("cell", sort=False)}
    start = by_cell["p0-crash-start-c0-r0"]
    assert list(start["error_class"].fillna("-")) == ["crashed", "-"] and start["final"].tolist() == [
        False,
        True,
    ]
    hang = by_cell["p0-hang-c0-r0"]
    assert list(hang["error_class"].fillna("-")) == ["timeout", "-"]
    assert hang["error"].iloc[0] == "timed out after 4 s" and hang["cell_status"].iloc[-1] == "finished"
    limited = by_cell["p0-rate-limit-c0-r0"]  # two bad starts: two retries, the third attempt works
    assert list(limited["attempt"]) == [1, 2, 3]
    assert list(limited["error_class"].fillna("-")) == ["rate_limited", "rate_limited", "-"]
    assert "429" in limited["error"].iloc[0] and limited["text"].iloc[-1] == "done 3"
    assert [starts(place, m) for m in ("crash-start", "hang", "rate-limit")] == [2, 2, 3]
    assert silo_nb.summarize(df, by="profile")["n"].tolist() == [1, 1, 1]


def test_a_class_not_listed_is_not_retried_and_refused_never_is(place: Path) -> None:
    df = grid(place, ["crash", "refuse"], retry={"timeout": 2, "rate_limited": 2})
    assert list(df["attempt"]) == [1, 1] and df["final"].all()
    assert list(df["error_class"]) == ["crashed", "refused"] and (df["cell_status"] == "failed").all()
    assert starts(place, "crash") == 1 and starts(place, "refuse") == 1
    df = grid(place, ["refuse-always"], name="again", retry={"crashed": 2, "timeout": 2, "rate_limited": 2})
    assert len(df) == 1 and df["error_class"].iloc[0] == "refused" and starts(place, "refuse-always") == 1


def test_retries_stop_at_the_limit_and_the_final_failure_is_the_cell(place: Path) -> None:
    recorder = Recorder()
    df = grid(place, ["crash-always"], retry={"crashed": 2}, progress=recorder)
    assert list(df["attempt"]) == [1, 2, 3] and list(df["final"]) == [False, False, True]
    assert (df["cell_status"] == "failed").all() and starts(place, "crash-always") == 3
    assert recorder.seen[-1].failed == 1 and recorder.seen[-1].done == 1
    assert silo_nb.summarize(df)["n"].tolist() == [1]


def test_a_resumed_run_retries_a_failure_on_disk_with_the_attempts_left(place: Path) -> None:
    first = grid(place, ["crash"], name="resumed")
    assert len(first) == 1 and first["error_class"].iloc[0] == "crashed"
    df = grid(place, ["crash"], name="resumed", retry={"crashed": 1})
    assert list(df["attempt"]) == [1, 2] and list(df["cell_status"]) == ["failed", "finished"]
    assert starts(place, "crash") == 2
    # The retry is spent: a third call leaves the cell as it is.
    assert (
        len(grid(place, ["crash"], name="resumed", retry={"crashed": 1})) == 2 and starts(place, "crash") == 2
    )


def test_bad_retry_and_cache_arguments_say_what_to_give(place: Path) -> None:
    for options, message in [
        ({"retry": {"crashd": 1}}, r"no error class 'crashd' — retry one of: crashed, timeout, rate_limited"),
        ({"retry": {"refused": 1}}, r"'refused' \(never retried"),
        ({"retry": {"crashed": -1}}, "give how many extra attempts"),
        ({"retry": {"crashed": True}}, "give how many extra attempts"),
        ({"retry_backoff": -1}, "retry_backoff=-1"),
    ]:
        with pytest.raises(ValueError, match=message):
            grid(place, ["crash"], **options)
    with pytest.raises(TypeError, match="retry= takes a dict"):
        grid(place, ["crash"], retry=["crashed"])
    with pytest.raises(TypeError, match="cache='yes'"):
        grid(place, ["crash"], cache="yes")
    assert starts(place, "crash") == 0 and not (place / "runs").exists()


def test_error_classes_from_the_words_of_real_errors() -> None:
    cases = {
        "timed out after 300 s": "timeout",
        "The prompt turn failed: Demo did not answer session/prompt within 60 s (raise …)": "timeout",
        "The prompt turn failed: 429 rate_limit_error: Overloaded": "rate_limited",
        'The prompt turn failed: {"type":"overloaded_error","message":"Overloaded"}': "rate_limited",
        "The prompt turn failed: Too Many Requests": "rate_limited",
        "Could not start x: agent exited with code 1": "crashed",
        "The prompt turn failed: ACP connection closed": "crashed",
        "The prompt turn failed: invalid request": "refused",
        "TypeError: run() gave NoneType, not a CellResult": "other",
    }
    assert {text: error_class(text) for text in cases} == cases
    assert error_class(None) is None and error_class("anything", agent_gone=True) == "crashed"
    assert set(cases.values()) == set(ERROR_CLASSES)


def cached_grid(place: Path, name: str, **options: Any) -> Any:
    options = {
        "configs": [{"model": "demo-fast"}],
        "repeats": 2,
        "scorers": {"said": said_something},
        "template": place / "template",
        **options,
    }
    return anyio.run(
        lambda: run_grid(
            ["hello there"],
            profiles=["counted"],
            name=name,
            folder=place / "runs",
            config_dirs=[place / "cfg"],
            progress=False,
            cache=True,
            **options,
        )
    )


def said_something(run: Any) -> bool:
    return bool(run.final_text)


def said_something_else(run: Any) -> bool:
    return len(run.final_text) > 3


def test_a_cache_hit_across_runs_starts_no_agent_and_a_changed_input_misses(place: Path) -> None:
    (place / "template").mkdir()
    (place / "template" / "notes.md").write_text("first\n")
    first = cached_grid(place, "a")
    assert starts(place, "demo-starts") == 2 and first["cached_from"].isna().all()
    second = cached_grid(place, "b")
    assert starts(place, "demo-starts") == 2  # both cells reused: no agent started
    assert list(second["cached_from"]) == ["a/p0-counted-c0-r0", "a/p0-counted-c0-r1"]
    for column in ("text", "session", "score.said", "cell_status", "attempt"):
        assert list(second[column]) == list(first[column]), column
    assert Path(second.attrs["run_folder"], "journals", "p0-counted-c0-r1.jsonl").is_file()
    assert silo_nb.summarize(second)["n"].tolist() == [2]
    # Each input that changes what a cell does is a miss (both repeats run again).
    cached_grid(place, "config", configs=[{"model": "demo-smart"}])
    assert starts(place, "demo-starts") == 4
    cached_grid(place, "scorer", scorers={"said": said_something_else})
    assert starts(place, "demo-starts") == 6
    (place / "template" / "notes.md").write_text("second\n")
    changed = cached_grid(place, "template")
    assert starts(place, "demo-starts") == 8 and changed["cached_from"].isna().all()
    # The source of an entry deleted: a miss (the stale entry is dropped), not an error.
    (place / "template" / "notes.md").write_text("first\n")
    shutil.rmtree(place / "runs" / "a")
    shutil.rmtree(place / "runs" / "b")
    redo = cached_grid(place, "redo")
    assert starts(place, "demo-starts") == 10 and redo["cached_from"].isna().all()
    assert list(cached_grid(place, "reuse")["cached_from"]) == [
        "redo/p0-counted-c0-r0",
        "redo/p0-counted-c0-r1",
    ]
    assert starts(place, "demo-starts") == 10


def test_a_failed_cell_is_not_cached(place: Path) -> None:
    grid(place, ["refuse"], name="one", cache=True)
    df = grid(place, ["refuse"], name="two", cache=True)
    assert (
        starts(place, "refuse") == 2
        and df["cached_from"].isna().all()
        and df["cell_status"].iloc[0] == "finished"
    )


def test_the_key_covers_a_pinned_agent_spec() -> None:
    spec = CellSpec(cell="c", profile="p", config={}, prompts=("hi",), timeout=1.0)
    plain = cell_key(spec, {"profile": "p", "command": "x"}, None)
    pinned = cell_key(spec, {"spec": "npm:pkg@1.0.0"}, None)
    other = cell_key(spec, {"spec": "npm:pkg@1.0.1"}, None)
    assert len({plain, pinned, other}) == 3
    assert cell_key(spec, {"spec": "npm:pkg@1.0.0"}, None) == pinned


def test_the_grid_budget_counts_what_every_attempt_spent(place: Path) -> None:
    # hang-twice spends 0.01 and hangs on its first two starts. One at a time: p0 hangs (0.01), p1 hangs
    # (0.02), p0's retry works (0.03): p1's retry finds the 0.025 spent and does not start — its first
    # attempt stays its final one. Resumed, the spend is read back from every attempt on disk (0.03), so
    # p1 is still not retried; counting only final attempts (0.02) would have retried it.
    def run() -> Any:
        return anyio.run(
            lambda: run_grid(
                ["hi", "again"],
                profiles=["hang-twice"],
                folder=place / "runs",
                config_dirs=[place / "cfg"],
                progress=False,
                timeout=4.0,
                concurrency=1,
                retry={"timeout": 1},
                budget={"cost": 0.025},
            )
        )

    df = run()
    first, second = (df[df["cell"] == f"p{n}-hang-twice-c0-r0"] for n in (0, 1))
    assert list(first["attempt"]) == [1, 2] and list(first["cell_cost"]) == [0.01, 0.01]
    assert list(first["cell_status"]) == ["failed", "finished"]
    assert list(second["attempt"]) == [1] and list(second["error_class"]) == ["timeout"]
    assert starts(place, "hang-twice") == 3
    assert not (Path(df.attrs["run_folder"]) / "not_run.json").exists()  # both cells ran
    again = run()
    assert starts(place, "hang-twice") == 3
    pd.testing.assert_frame_equal(again, df)


def threshold_scorer(limit: int) -> Any:
    def long_enough(run: Any) -> bool:
        return len(run.final_text) > limit

    return long_enough


def test_a_scorer_s_identity_follows_its_body_closure_and_command() -> None:
    assert scorer_identity(threshold_scorer(3)) == scorer_identity(threshold_scorer(3))
    assert scorer_identity(threshold_scorer(3)) != scorer_identity(threshold_scorer(4))
    assert scorer_identity(said_something) != scorer_identity(said_something_else)
    tests = silo_nb.command_scorer(["pytest", "-q"])
    assert scorer_identity(tests) == scorer_identity(silo_nb.command_scorer(["pytest", "-q"]))
    assert scorer_identity(tests) != scorer_identity(silo_nb.command_scorer(["pytest", "-x"]))
    assert scorer_identity(tests) != scorer_identity(silo_nb.command_scorer(["pytest", "-q"], timeout=5))
    looped: list[Any] = [1]
    looped.append(looped)

    def odd(run: Any, seen: list[Any] = looped) -> Any:  # holds itself: still a finite identity
        return odd

    assert len(scorer_identity(odd)) == 16


def test_retries_and_the_cache_on_a_dask_local_cluster(place: Path) -> None:
    distributed = pytest.importorskip("distributed")  # the test extra installs it; CI never skips
    with (
        distributed.LocalCluster(
            n_workers=1,
            threads_per_worker=2,
            processes=True,
            dashboard_address=None,
            worker_dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        retry = {"crashed": 1, "rate_limited": 2}
        df = grid(place, ["crash", "rate-limit"], name="dask", executor=client, retry=retry, cache=True)
        again = grid(place, ["crash", "rate-limit"], name="dask-again", executor=client, cache=True)
    assert list(df["attempt"]) == [1, 2, 1, 2, 3] and df["executor"].str.startswith("dask").all()
    assert list(df["error_class"].fillna("-")) == ["crashed", "-", "rate_limited", "rate_limited", "-"]
    assert silo_nb.summarize(df, by="profile")["n"].tolist() == [1, 1]
    assert list(again["cached_from"]) == ["dask/p0-crash-c0-r0", "dask/p0-rate-limit-c0-r0"]
    assert list(again["attempt"]) == [1, 1] and list(again["text"]) == ["done 2", "done 3"]  # the final ones
    assert starts(place, "crash") == 2 and starts(place, "rate-limit") == 3  # the hits started nothing


def test_a_stale_or_tampered_cache_entry_is_a_miss(tmp_path: Path) -> None:
    cache = CellCache(tmp_path / "grid-cache")
    run = RunFolder.create(tmp_path / "runs" / "a", "a", [{"cell": "c"}])
    run.save("c", [], {"cell": "c", "status": "finished", "cache_key": "k" * 64})
    cache.remember("k" * 64, run, "c")
    assert cache.find("k" * 64) == (RunFolder(run.path, "a", ()), "c")
    assert cache.find("j" * 64) is None  # never indexed
    entry = tmp_path / "grid-cache" / "kk" / f"{'k' * 64}.json"
    run.path.chmod(0o777)  # others may write the source: a forged result could be there
    assert cache.find("k" * 64) is None and not entry.exists()
    run.path.chmod(0o700)
    cache.remember("k" * 64, run, "c")
    run.save("c", [], {"cell": "c", "status": "failed", "cache_key": "k" * 64})  # re-run: now failed
    assert cache.find("k" * 64) is None and not entry.exists()
    cache.remember("m" * 64, run, "c")  # an entry whose record was written under another key
    assert cache.find("m" * 64) is None
    entry = tmp_path / "grid-cache" / "nn" / f"{'n' * 64}.json"
    entry.parent.mkdir(mode=0o700)
    entry.write_text("{not json")
    assert cache.find("n" * 64) is None
    cache.remember("p" * 64, RunFolder(tmp_path / "runs" / "gone", "gone", ()), "c")
    assert cache.find("p" * 64) is None and not (tmp_path / "runs" / "gone").exists()
