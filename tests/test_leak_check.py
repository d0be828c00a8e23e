"""The autouse check (``conftest._nothing_left_behind``) fails a test that leaves a journal lock held or a
task running: such state leaked into later tests before it was owned by objects."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LEAKY = """
import asyncio
from pathlib import Path

from silo_nb.sessions.journal.locks import JournalLocks

KEPT = []


def test_a_lock_kept_held(tmp_path: Path) -> None:
    locks = JournalLocks()
    locks.acquire(tmp_path / "s.jsonl", "s")
    KEPT.append(locks)  # still referenced after the test: the lock stays held


async def test_a_task_left_running() -> None:
    asyncio.get_running_loop().create_task(asyncio.sleep(3600), name="forgotten")


def test_a_clean_one(tmp_path: Path) -> None:
    locks = JournalLocks()
    locks.acquire(tmp_path / "s.jsonl", "s")
    locks.release_all()
"""


def test_the_leak_check_fails_the_tests_that_leave_something_behind(tmp_path: Path) -> None:
    test_file = ROOT / "tests" / f"test_leaky_probe_{tmp_path.name}.py"
    test_file.write_text(LEAKY)
    try:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "-p",
                "no:randomly",
                str(test_file),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        test_file.unlink()
    out = result.stdout
    assert "journal locks still held" in out, out
    assert "tasks still pending: ['forgotten']" in out, out
    errors = [line for line in out.splitlines() if line.startswith("ERROR ")]
    # The summary line may carry " - <message>" when the terminal is wide
    # enough (CI's is): the test's name is what comes before it.
    names = [line.split(" - ", 1)[0].rsplit("::", 1)[1] for line in errors]
    assert names == [
        "test_a_lock_kept_held",
        "test_a_task_left_running",
    ]
