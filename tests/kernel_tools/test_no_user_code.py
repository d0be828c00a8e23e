"""Issue 28: ``list_variables`` runs none of the user's code (a ``__class__`` property, a ``__sizeof__``, a
``__len__``, a metaclass's ``__module__``, a ``str`` subclass as a name: each counts its calls, and the
count stays 0); ``inspect_variable`` (and ``run_code``) end at their bound even when the user's code
catches ``BaseException`` and carries on; the socket's folder is never made in a runtime folder that is
not ours alone."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from silo_nb.kernel_tools import KernelNamespace, KernelToolServer
from silo_nb.kernel_tools.tools import KernelTools

ROOT = Path(__file__).resolve().parents[2]
HANG_GUARD = 60  # seconds: the child's bound is 1 s; this only stops a child the bound did not stop

CALLS: list[str] = []  # every call of the user's code the listing made


class SneakyClass:
    """``__class__`` a property and ``__sizeof__`` its own: both the user's code."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        CALLS.append("__class__")
        return list

    def __sizeof__(self) -> int:
        CALLS.append("__sizeof__")
        return 1


class SneakyList(list[int]):
    def __len__(self) -> int:
        CALLS.append("__len__")
        return 0

    def __sizeof__(self) -> int:
        CALLS.append("list __sizeof__")
        return 0


class SneakyMeta(type):
    @property  # type: ignore[misc]
    def __module__(cls) -> str:  # type: ignore[override]
        CALLS.append("metaclass __module__")
        return "somewhere"


class Meta(metaclass=SneakyMeta):
    pass


class SneakyName(str):
    __slots__ = ()

    def __hash__(self) -> int:
        CALLS.append("name __hash__")
        return 1

    def __eq__(self, other: object) -> bool:
        CALLS.append("name __eq__")
        return False

    def __lt__(self, other: object) -> bool:
        CALLS.append("name __lt__")
        return False

    def startswith(self, *args: Any) -> bool:  # type: ignore[override]
        CALLS.append("name startswith")
        return False


class FakeFrame:
    """A class that calls itself pandas' DataFrame: it is not, so its ``shape`` is never read."""

    __module__ = "pandas"
    __qualname__ = "DataFrame"

    @property
    def shape(self) -> tuple[int, int]:
        CALLS.append("shape")
        return (1, 1)


def test_list_variables_runs_none_of_the_user_s_code() -> None:
    namespace: dict[Any, Any] = {
        "sneaky": SneakyClass(),
        "sneaky_list": SneakyList([1, 2, 3]),
        "meta": Meta(),
        "fake_frame": FakeFrame(),
        "plain": [1, 2, 3],
    }
    namespace[SneakyName("odd_name")] = 1  # hashed here, by the test: the listing must not
    CALLS.clear()
    outcome = KernelTools(KernelNamespace(namespace), run_code_timeout=5).read("list_variables", {})
    assert CALLS == []
    assert outcome.status == "completed", outcome.text
    lines = [line for line in outcome.text.splitlines() if line.startswith("| ")]
    rows = {line.split(" | ")[0].strip("| "): line for line in lines}
    here = __name__.split(".")[0]  # this test's top package, as the type column names it
    assert f"| SneakyClass ({here}) |  |" in rows["sneaky"]  # its real type, not the list __class__ claims
    assert f"| SneakyList ({here}) | len 3 |" in rows["sneaky_list"]  # list's own length, not __len__'s 0
    assert f"| Meta ({here}) |" in rows["meta"]
    assert "| DataFrame (pandas) |  |" in rows["fake_frame"]  # named as it says, but not read as a frame
    assert "| list | len 3 |" in rows["plain"]
    assert "odd_name" not in outcome.text  # a name that is not a plain str is not listed


def run_child(case: str) -> dict[str, Any]:
    """``stubborn_code.py`` CASE in a child process; its JSON line. A bound that does not hold hangs the
    child: the hang guard kills it and fails the test."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tests.kernel_tools.stubborn_code", case],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=HANG_GUARD,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{case}: the tool never ended (the child was killed after {exc.timeout:g} s)")
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    # The kernel is as it was: it answers, the alarm's handler is back, no timer, no trace function.
    assert result["after"][0] == "completed" and "42" in result["after"][1]
    assert result["alarm_handler_back"] and result["timer"] == [0.0, 0.0] and result["trace"] == "None"
    return result


@pytest.mark.parametrize("case", ["swallowing", "tight", "nested"])
def test_a_repr_that_swallows_the_bound_still_ends_at_it(case: str) -> None:
    result = run_child(case)
    assert result["status"] == "timed_out"
    assert result["text"] == "inspect_variable stopped after 1 s (a repr or a size took too long)."
    assert result["swallowed"] >= 1  # it caught the stop at least once, and was stopped all the same


def test_code_that_swallows_the_bound_still_ends_at_it() -> None:
    result = run_child("swallowing-code")
    assert result["status"] == "timed_out" and "longer than 1 s" in result["text"]
    assert result["swallowed"] >= 1


def test_code_that_cleans_up_when_stopped_may_finish_its_cleanup() -> None:
    """The first stop is an ordinary exception: a ``finally`` that returns promptly runs to its end."""
    result = run_child("polite-code")
    assert result["status"] == "timed_out" and result["cleaned"] is True


async def served_from(runtime: Path) -> bool:
    """Whether a server's socket folder was made under ``runtime``; the folder is ours and 0700 either way."""
    server = await KernelToolServer(KernelNamespace({})).start()
    try:
        assert server.folder is not None
        info = os.lstat(server.folder)
        assert stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
        assert stat.S_IMODE(info.st_mode) == 0o700
        return Path(server.folder).parent == runtime
    finally:
        await server.aclose()


async def test_a_runtime_folder_of_ours_alone_is_used(runtime_dir: Path) -> None:
    assert await served_from(runtime_dir)


async def test_a_runtime_folder_others_may_write_is_not_used(runtime_dir: Path) -> None:
    runtime_dir.chmod(0o777)
    assert not await served_from(runtime_dir)
    runtime_dir.chmod(0o1777)  # sticky is not enough: XDG's folder is its owner's alone
    assert not await served_from(runtime_dir)


async def test_a_runtime_folder_of_another_user_is_not_used(
    runtime_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.geteuid() == 0:
        os.chown(runtime_dir, 65534, 65534)  # nobody's, and 0700: only its owner's
    else:  # we cannot give one away: root's own folder stands for another user's
        runtime_dir = Path("/root")
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime_dir))
    assert not await served_from(runtime_dir)
