"""The fast tier (``pytest -m "not slow"``) spawns nothing, and the list that says what is slow is true."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.support.tiers import SLOW_LIST, TESTS, SpawnedProcess, is_slow, no_processes, read_slow_list


def fake_item(relative: str, name: str = "test_x", fixtures: tuple[str, ...] = ()) -> pytest.Item:
    path = TESTS / relative
    return SimpleNamespace(  # type: ignore[return-value]
        path=path, nodeid=f"tests/{relative}::{name}[a-b]", fixturenames=list(fixtures)
    )


def test_a_fast_test_cannot_start_a_process(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("slow") is None
    with pytest.raises(SpawnedProcess, match=r"slow_tests\.txt"):
        subprocess.run(["true"], check=False)
    with pytest.raises(SpawnedProcess):
        os.posix_spawn("/bin/true", ["true"], {})


def test_the_guard_puts_back_what_it_replaced() -> None:
    before = (os.fork, os.posix_spawn, subprocess._fork_exec)  # type: ignore[attr-defined]
    with no_processes("tests/x.py::test_y"), pytest.raises(SpawnedProcess, match="test_y"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)
    assert (os.fork, os.posix_spawn, subprocess._fork_exec) == before  # type: ignore[attr-defined]


@pytest.mark.slow
def test_a_slow_test_may_start_one() -> None:
    assert subprocess.run(["true"], check=False).returncode == 0


def test_folders_fixtures_and_the_list_decide_what_is_slow() -> None:
    listed = {"tests/acp/test_pipe.py::test_y", "tests/acp/test_subprocess.py"}
    assert is_slow(fake_item("integration/test_kernel.py"), set())
    assert is_slow(fake_item("e2e/test_browser.py"), set())
    assert is_slow(fake_item("notebook/test_magics.py", fixtures=("kernel_name",)), set())
    assert is_slow(fake_item("acp/test_pipe.py", "test_y"), listed)  # parameters don't matter
    assert is_slow(fake_item("acp/test_subprocess.py", "test_anything"), listed)  # a whole file
    assert not is_slow(fake_item("acp/test_pipe.py", "test_z"), listed)
    assert not is_slow(fake_item("notebook/test_magics.py", fixtures=("workspace",)), listed)


def test_every_listed_slow_test_exists() -> None:
    """A renamed or removed test leaves no stale line behind (the list would hide nothing, but lie)."""
    stale = []
    for entry in sorted(read_slow_list()):
        file, _, name = entry.partition("::")
        path = TESTS.parent / file
        if not path.is_file():
            stale.append(f"{entry}: no such file")
        elif name and not re.search(
            rf"^\s*(async )?def {re.escape(name.split('::')[-1])}\(", path.read_text(), re.M
        ):
            stale.append(f"{entry}: no such test in {file}")
    assert not stale, f"stale lines in {SLOW_LIST.relative_to(TESTS.parent)}:\n" + "\n".join(stale)


def test_the_list_is_sorted_and_names_no_test_a_folder_already_makes_slow() -> None:
    lines = [line for line in SLOW_LIST.read_text().splitlines() if line and not line.startswith("#")]
    assert lines == sorted(set(lines)), "keep tests/support/slow_tests.txt sorted, one line per test"
    redundant = [
        line for line in lines if Path(line.split("::")[0]).parts[1] in ("integration", "e2e", "node")
    ]
    assert not redundant, redundant


def test_helpers_live_in_support_not_in_test_modules() -> None:
    """A test module imports helpers from ``tests/support`` (or ``tests/conftest.py``, ``tests/work.py``),
    never from another test module: importing one runs its module-level code and hides its tests' helpers
    from the folder they serve."""
    imports = re.compile(r"^\s*(?:from|import) (tests(?:\.\w+)*\.test_\w+)", re.MULTILINE)
    bad = [
        f"{path.relative_to(TESTS.parent)} imports {match}"
        for path in sorted(TESTS.rglob("test_*.py"))
        if "node_modules" not in path.parts
        for match in imports.findall(path.read_text())
    ]
    assert not bad, "\n".join(bad)
