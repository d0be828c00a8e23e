"""``run_grid`` and the kernel tools: off unless ``kernel_tools=True``; on, each cell's session sees this
process's ``__main__`` namespace, and code runs only where the policy names ``code``."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

import silo_nb
from silo_nb.experiments import run_grid
from tests.conftest import Workspace

PROMPT = "look into grid_frame"


@pytest.fixture
def main_namespace() -> Iterator[dict[str, object]]:
    namespace = sys.modules["__main__"].__dict__
    namespace["grid_frame"] = pd.DataFrame({"kind": ["a", "b", "a"], "size": [1.0, 2.0, 4.0]})
    yield namespace
    for name in ("grid_frame", "summary", "ax"):
        namespace.pop(name, None)


def replies(folder: Path, name: str) -> str:
    return " ".join(str(v) for v in silo_nb.frame(folder / name)["text"])


async def test_kernel_tools_are_off_in_run_grid_unless_asked(
    workspace: Workspace, main_namespace: dict[str, object], tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    allow = silo_nb.PermissionPolicy("allow code")
    await run_grid([PROMPT], policy=allow, folder=runs, name="off", progress=False, config_dirs=[])
    assert "no notebook tools" in replies(runs, "off") and "summary" not in main_namespace

    never = silo_nb.PermissionPolicy("allow *", otherwise="allow")
    await run_grid(
        [PROMPT], policy=never, folder=runs, name="no-code", progress=False, kernel_tools=True, config_dirs=[]
    )
    assert "The code did not run" in replies(runs, "no-code") and "summary" not in main_namespace

    await run_grid(
        [PROMPT], policy=allow, folder=runs, name="on", progress=False, kernel_tools=True, config_dirs=[]
    )
    assert "It ran" in replies(runs, "on")
    assert main_namespace["summary"].to_dict() == {"a": 2.5, "b": 2.0}  # type: ignore[attr-defined]


async def test_kernel_tools_need_the_cells_on_this_loop(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="kernel_tools=True works only with the cells on this kernel's loop"):
        await run_grid([PROMPT], folder=tmp_path, kernel_tools=True, executor=object(), progress=False)
    assert not any(tmp_path.iterdir())  # refused before anything was made


@pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (.ci/setup installs it)"
)
async def test_a_sandboxed_cell_reaches_the_kernel_tools_through_their_socket(
    workspace: Workspace, main_namespace: dict[str, object], tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    allow = silo_nb.PermissionPolicy("allow code")
    table = await run_grid(
        [PROMPT],
        policy=allow,
        folder=runs,
        name="boxed",
        progress=False,
        kernel_tools=True,
        config_dirs=[],
        sandbox="bwrap",
    )
    assert list(table["sandbox"]) == ["bwrap"] and "It ran" in replies(runs, "boxed"), list(table["error"])
    assert main_namespace["summary"].to_dict() == {"a": 2.5, "b": 2.0}  # type: ignore[attr-defined]
