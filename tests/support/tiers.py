"""The suite's two tiers: ``pytest -m "not slow"`` (the everyday command: nothing spawned) and the whole.

A test is ``slow`` when it lives in a folder of real processes (``integration``, ``e2e``, ``node``), asks for
a fixture that starts one (a kernel, the ipykernel 6 venv, the vendor agents' homes), or is listed in
``slow_tests.txt`` (the tests elsewhere that start an agent, a kernel or a program). A test not marked slow
that starts a process fails, saying to list it: the fast tier stays fast without anyone timing it.

Under pytest-xdist (``-n auto``) the tests that share something outside their ``tmp_path`` run in one
worker each: the browser tests (one Chromium and JupyterLab at a time on 2 cores) and the vendor agents
(one shared set of homes).
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent.parent
SLOW_LIST = Path(__file__).resolve().with_name("slow_tests.txt")
SLOW_FOLDERS = frozenset({"integration", "e2e", "node"})
SLOW_FIXTURES = frozenset({"kernel_name", "ipykernel6", "vendor_homes"})
XDIST_GROUPS = {"e2e": "browser", "vendor": "vendor-agents"}
RECORD_ENV = "SILO_NB_TIERS_RECORD"  # a file: list the spawning fast tests there instead of failing them


def test_key(item: pytest.Item) -> str:
    """The id a list entry names: the test without its parameters (``tests/acp/test_x.py::test_y``)."""
    return item.nodeid.split("[", 1)[0]


def read_slow_list(path: Path = SLOW_LIST) -> set[str]:
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def is_slow(item: pytest.Item, listed: set[str]) -> bool:
    parts = Path(str(item.path)).resolve().relative_to(TESTS).parts
    if parts and parts[0] in SLOW_FOLDERS:
        return True
    if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    key = test_key(item)
    return key in listed or key.split("::", 1)[0] in listed


def xdist_group(item: pytest.Item) -> str | None:
    parts = Path(str(item.path)).resolve().relative_to(TESTS).parts
    if parts and parts[0] == "e2e":
        return XDIST_GROUPS["e2e"]
    if "vendor_homes" in getattr(item, "fixturenames", ()):
        return XDIST_GROUPS["vendor"]
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: starts an agent, kernel or program: not in the fast tier")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    listed = read_slow_list()
    for item in items:
        if is_slow(item, listed):
            item.add_marker(pytest.mark.slow)
        if group := xdist_group(item):
            item.add_marker(pytest.mark.xdist_group(group))


class SpawnedProcess(RuntimeError):
    pass


@contextmanager
def no_processes(nodeid: str) -> Iterator[None]:
    """Refuse (or, with SILO_NB_TIERS_RECORD set, record) any process started while a fast test runs."""
    import _posixsubprocess
    import subprocess

    record = os.environ.get(RECORD_ENV)
    originals: dict[tuple[Any, str], Any] = {
        (_posixsubprocess, "fork_exec"): _posixsubprocess.fork_exec,
        (subprocess, "_fork_exec"): subprocess._fork_exec,  # type: ignore[attr-defined]
        (os, "fork"): os.fork,
        (os, "posix_spawn"): os.posix_spawn,
        (os, "posix_spawnp"): os.posix_spawnp,
    }

    def refuse(original: Any) -> Any:
        def guarded(*args: Any, **kwargs: Any) -> Any:
            if record:
                with open(record, "a", encoding="utf-8") as out:
                    out.write(nodeid.split("[", 1)[0] + "\n")
                return original(*args, **kwargs)
            raise SpawnedProcess(f"{nodeid} starts a process: list it in tests/support/slow_tests.txt")

        return guarded

    for (owner, name), original in originals.items():
        setattr(owner, name, refuse(original))
    try:
        yield
    finally:
        for (owner, name), original in originals.items():
            setattr(owner, name, original)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    if item.get_closest_marker("slow") is not None:
        yield
        return
    with no_processes(item.nodeid):
        yield
