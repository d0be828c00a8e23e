"""The kernel variables' part of a turn's undo (``kernel_tools/turn_parts.py``): saved before each allowed run
of a turn (the first save of a name wins), within a budget across turns; a name too big, or whose copy raises
or hangs, said at once and listed by the undo; the oldest turns dropped to make room, and said so."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from silo_nb.kernel_tools import KernelNamespace
from silo_nb.kernel_tools.turn_parts import VariableCheckpoints
from silo_nb.model import AgentSessionUpdate, KernelToolLine


class Hostile:
    def __init__(self, pause: float = 0.0, fail: bool = False) -> None:
        self.pause, self.fail = pause, fail

    def __deepcopy__(self, memo: Any) -> Hostile:
        if self.fail:
            raise RuntimeError("no copies of me")
        time.sleep(self.pause)
        return Hostile()


RAN = [KernelToolLine.written({"callId": "c", "tool": "run_code", "status": "completed"})]


async def run(part: VariableCheckpoints, turn: int, code: str) -> list[str]:
    said = await part.before_run(turn, code)
    exec(code, part.namespace.user_ns)
    part.after_run(turn, code)
    return said


def by_name(items: list[Any]) -> dict[str, Any]:
    return {item.subject: item for item in items}


async def test_the_first_save_of_a_name_in_a_turn_wins() -> None:
    ns: dict[str, Any] = {"rows": [1]}
    part = VariableCheckpoints(KernelNamespace(ns))
    await run(part, 1, "rows.append(2)\nx = 1")
    await run(part, 1, "rows.append(3)\nx = 2")
    items = by_name(await part.undo_turn(1, RAN))
    assert ns == {"rows": [1], "__builtins__": ns["__builtins__"]}
    assert items["rows"].restored and items["x"].said == "made by turn 1: removed"


async def test_too_big_raising_and_hanging_values_are_said_at_once_and_listed_by_the_undo() -> None:
    big = pd.DataFrame({"v": np.zeros(200_000)})  # 1.6 MB: over this test's budget (a 5 GB frame's case)
    ns: dict[str, Any] = {"big": big, "raises": Hostile(fail=True), "hangs": Hostile(pause=120), "ok": [1]}
    part = VariableCheckpoints(KernelNamespace(ns), max_bytes=64 * 1024, seconds=0.2)
    started = time.monotonic()
    said = await run(part, 1, "big['v'] += 1\nraises.x = 1\nhangs.x = 1\nok.append(2)")
    assert time.monotonic() - started < 60  # the 2-minute copy was not waited for
    assert len(said) == 3 and all(
        line.startswith("not checkpointed (an undo cannot restore it): ") for line in said
    )
    items = by_name(await part.undo_turn(1, RAN))
    assert items["ok"].restored and ns["ok"] == [1]
    for name in ("big", "raises", "hangs"):
        assert not items[name].restored and items[name].said.startswith("not restorable: "), name
    assert "checkpoint_max_bytes" in items["big"].said and (ns["big"]["v"] == 1).all()  # left as it was


async def test_the_oldest_turns_are_dropped_to_stay_within_the_budget_and_their_undo_says_so() -> None:
    ns: dict[str, Any] = {"a": np.zeros(40_000), "b": np.zeros(40_000)}  # 320 KB each
    part = VariableCheckpoints(KernelNamespace(ns), max_bytes=500 * 1024)
    await run(part, 1, "a += 1")
    await run(part, 2, "b += 1")
    assert part.turns() == [2] and part.bytes <= 500 * 1024
    [dropped] = await part.undo_turn(1, RAN)
    assert (
        not dropped.restored and "dropped to keep the checkpoints within checkpoint_max_bytes" in dropped.said
    )
    assert by_name(await part.undo_turn(2, RAN))["b"].restored and (ns["b"] == 0).all()


async def test_a_turn_that_ran_no_code_has_nothing_to_say() -> None:
    part = VariableCheckpoints(KernelNamespace({}))
    refused: list[AgentSessionUpdate] = [
        KernelToolLine.written({"callId": "c", "tool": "run_code", "status": "refused"})
    ]
    assert await part.undo_turn(1, refused) == []


async def test_a_frame_the_code_only_read_is_not_listed_as_put_back() -> None:
    df = pd.DataFrame({"s": ["a", "b", "a"], "v": [1.0, 2.0, np.nan]})
    ns: dict[str, Any] = {"df": df, "arr": np.array([1.0, np.nan])}
    part = VariableCheckpoints(KernelNamespace(ns))
    await run(part, 1, "summary = df.groupby('s').v.mean()\nm = arr.mean()\narr.sort()")
    items = by_name(await part.undo_turn(1, RAN))
    assert set(items) == {"summary", "m"} and ns["df"] is df  # read only: left alone, not listed
    ns2: dict[str, Any] = {"df": df.copy()}
    part2 = VariableCheckpoints(KernelNamespace(ns2))
    await run(part2, 1, "df.loc[2, 'v'] = 3.0")
    assert by_name(await part2.undo_turn(1, RAN))["df"].restored and np.isnan(ns2["df"].loc[2, "v"])


async def test_a_failing_checkpoint_does_not_keep_the_code_from_running(monkeypatch: Any) -> None:
    from silo_nb.kernel_tools import KernelToolServer
    from silo_nb.kernel_tools.code_runner import CodeResult
    from silo_nb.util import Disposable

    class Session:
        current_turn = 1
        client_tool_calls = None

        def add_undo_part(self, part: Any) -> Disposable:
            return Disposable(lambda: None)

    async def broken(turn: int, code: str) -> list[str]:
        raise RuntimeError("a bug")

    server = KernelToolServer(KernelNamespace({}))
    server.bind(Session())  # type: ignore[arg-type]  # the parts of a session the run asks
    monkeypatch.setattr(server.variables, "before_run", broken)
    ran: list[str] = []

    def run_it() -> CodeResult:
        ran.append("x = 1")
        return CodeResult("completed")

    result = await server.guarded_run("x = 1", run_it)
    assert ran == ["x = 1"]
    assert result.notes == ["not checkpointed (an undo cannot restore what this run changes): RuntimeError"]
