"""The demo agent's ``fix`` task: the smart model's code passes the check, the fast one's half the time."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from silo_nb_agents.demo.fixes import SOLUTIONS, apply_fix, fix_tokens, plan_fix
from tests.demo_agent.helpers import answer_with, bounded, running_agent, updates

TASK = Path(__file__).resolve().parents[2] / "notebooks" / "data" / "stats-task"


def checks(folder: Path) -> dict[str, int]:
    """Exit code of the task's own check, per function (0: right)."""
    return {
        name: subprocess.run(
            [sys.executable, "check.py", name], cwd=folder, capture_output=True, check=False, timeout=60
        ).returncode
        for name in SOLUTIONS
    }


@pytest.mark.parametrize(
    ("model", "passing"),
    [("demo-fast", {"mean", "mode"}), ("demo-smart", {"mean", "median", "mode", "variance"})],
)
def test_each_models_fixes_pass_the_tasks_check_as_documented(
    tmp_path: Path, model: str, passing: set[str]
) -> None:
    shutil.copytree(TASK, tmp_path, dirs_exist_ok=True)
    assert set(checks(tmp_path).values()) == {1}  # the stubs fail every check
    for name in SOLUTIONS:
        plan = plan_fix(str(tmp_path), f"Fix {name} in stats.py please", model)
        assert plan.problem is None and plan.function == name
        assert apply_fix(plan) is None
        assert apply_fix(plan) is not None  # the file changed since it was read: never written twice
    assert {name for name, code in checks(tmp_path).items() if code == 0} == passing
    assert fix_tokens("demo-smart", "read") == 3 * fix_tokens("demo-fast", "read")


def test_what_a_fix_cannot_do_is_said(tmp_path: Path) -> None:
    assert plan_fix(str(tmp_path), "fix it", "demo-fast").problem == (
        "name the function to fix (`mean`, `median`, `mode`, `variance`)"
    )
    assert plan_fix(str(tmp_path), "fix mean", "demo-fast").problem == (
        "there is no stats.py in the working directory"
    )
    (tmp_path / "other.py").write_text("def median(values):\n    pass\n")
    assert plan_fix(str(tmp_path), "fix mean in other.py", "demo-fast").problem == (
        "other.py has no function `mean`"
    )
    fixed = plan_fix(str(tmp_path), "fix median in other.py", "demo-fast")
    assert fixed.new_text == SOLUTIONS["median"][0]


@pytest.mark.asyncio
@bounded
async def test_a_fix_turn_asks_to_edit_reports_usage_as_it_goes_and_in_its_answer(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(TASK, project)
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session(str(project))
        await wire.call(
            "session/set_config_option", {"sessionId": session_id, "configId": "model", "value": "demo-smart"}
        )
        seen, response = await wire.prompt(session_id, "fix median in stats.py", answer_with("allow-once"))
    asked = [m for m in seen if m.get("method") == "session/request_permission"]
    assert len(asked) == 1 and asked[0]["params"]["toolCall"]["kind"] == "edit"
    used = [u["used"] for u in updates(seen) if u["sessionUpdate"] == "usage_update"]
    assert len(used) == 3 and used == sorted(used)  # after the read, after the edit, at the end
    result = response["result"]
    assert result["stopReason"] == "end_turn" and result["usage"]["totalTokens"] == used[-1]
    assert checks(project)["median"] == 0
