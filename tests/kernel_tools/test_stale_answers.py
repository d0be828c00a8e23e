"""``StaleAnswers`` alone, on a plain namespace (issue 32, step 3): what a turn read is fingerprinted at its
end; a later change or deletion makes the turn stale, a change inside the turn does not; listed names are
watched for type and shape only; cells by their runs; bounds (caps, the check's budget, a value whose
fingerprint hangs or raises); ``watch`` and ``handle.stale_turns()``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pandas as pd

from silo_nb.kernel_tools import KernelNamespace, NotebookCell, StaleAnswers
from silo_nb.kernel_tools.stale_answers import MAX_TURNS, MAX_VALUES
from silo_nb.model import AgentSessionUpdate, StaleTurn, TurnUndoneLine
from silo_nb.util import Disposable, ListenerSet
from tests.conftest import Workspace


def tracker(**ns: Any) -> StaleAnswers:
    return StaleAnswers(KernelNamespace(dict(ns)))


def frame() -> pd.DataFrame:
    return pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})


def test_a_value_inspected_then_changed_makes_its_turn_stale() -> None:
    stale = tracker(df=frame(), other=[1, 2])
    stale.tool_read("inspect_variable", {"name": "df"})
    stale.seal(1)
    assert stale.read_by(1) and stale.check() == [] and stale.stale_turns() == []
    stale.namespace.user_ns["df"].loc[0, "a"] = 99
    assert stale.check() == [StaleTurn(1, ("df changed",))]
    assert stale.check() == []  # reported once; still listed
    assert stale.stale_turns() == [StaleTurn(1, ("df changed",))]
    assert str(stale.stale_turns()[0]) == "turn 1: df changed since this answer"


def test_the_turn_s_own_changes_are_its_answer_not_a_staleness() -> None:
    stale = tracker(df=frame())
    stale.tool_read("inspect_variable", {"name": "df"})
    stale.namespace.user_ns["df"].loc[1, "a"] = -1  # the agent's run_code, inside the turn
    stale.seal(4)
    assert stale.check() == []


def test_a_deleted_name_and_an_unaffected_turn() -> None:
    stale = tracker(df=frame(), x=np.arange(10), sales=frame())
    stale.tool_read("inspect_variable", {"name": "x"})
    stale.seal(1)
    stale.tool_read("inspect_variable", {"name": "sales"})
    stale.seal(2)
    del stale.namespace.user_ns["x"]
    assert stale.check() == [StaleTurn(1, ("x was deleted",))]
    assert [t.turn for t in stale.stale_turns()] == [1]  # turn 2 read sales only: fresh


def test_an_unknown_name_or_a_failed_read_watches_nothing() -> None:
    stale = tracker(df=frame())
    stale.tool_read("inspect_variable", {"name": "nope"})
    stale.tool_read("inspect_variable", "not an object")
    stale.tool_read("show_figure", {})
    stale.seal(1)
    assert not stale.read_by(1)


def test_listed_names_are_watched_for_type_and_shape_only() -> None:
    stale = tracker(df=frame(), rows=[1, 2, 3], n=5)
    stale.tool_read("list_variables", {})
    stale.seal(1)
    stale.namespace.user_ns["df"].loc[0, "a"] = 99  # the list still says 3 × 2
    stale.namespace.user_ns["n"] = 6  # still an int
    stale.namespace.user_ns["new"] = 1  # not listed then: not watched
    assert stale.check() == []
    stale.namespace.user_ns["rows"].append(4)
    assert stale.check() == [StaleTurn(1, ("rows changed",))]


def test_a_name_listed_and_inspected_is_watched_by_value() -> None:
    stale = tracker(df=frame())
    stale.tool_read("list_variables", {})
    stale.tool_read("inspect_variable", {"name": "df"})
    stale.seal(1)
    stale.namespace.user_ns["df"].loc[0, "b"] = "changed"
    assert stale.check() == [StaleTurn(1, ("df changed",))]


def test_attached_values_of_a_finished_turn() -> None:
    stale = tracker(df=frame(), note="hello")
    stale.seal(3)  # the turn read nothing through the tools
    stale.note_values(3, ["df", "note", "missing"])
    assert stale.read_by(3)
    stale.namespace.user_ns["note"] = "bye"
    assert stale.check() == [StaleTurn(3, ("note changed",))]


def test_cells_read_go_stale_when_they_run_again() -> None:
    stale = tracker(In=["", "a = 1", "b = a + 1", "print(b)"])
    for count, cell_id in ((1, "c-a"), (2, "c-b"), (3, "c-print")):
        stale.cell_ran(cell_id, stale.namespace.user_ns["In"][count], count)
    stale.tool_read("read_cells", {"last": 2})  # In [2] and In [3]
    stale.tool_read(
        "read_notebook", {}, cells=[NotebookCell("c-a", "a = 1", 1), NotebookCell("md", "# hi", 4)]
    )
    stale.seal(1)
    stale.cell_ran("c-unread", "x = 1", 4)
    assert stale.check() == []
    stale.cell_ran("c-b", "b = a + 2", 5)
    stale.cell_ran("c-a", "a = 1", 6)
    assert stale.check() == [StaleTurn(1, ("cell In [2] changed", "cell 1 ran again"))]
    stale.cell_ran("c-b", "b = 0", 7)  # already stale for it: said once
    assert stale.check() == []


def test_caps_per_turn_and_on_turns() -> None:
    names = {f"v{i}": i for i in range(MAX_VALUES + 50)}
    stale = tracker(**names)
    for name in names:
        stale.tool_read("inspect_variable", {"name": name})
    stale.seal(1)
    for name in names:
        stale.namespace.user_ns[name] = -1
    (turn,) = stale.check()
    assert len(turn.changed) == MAX_VALUES
    for number in range(2, MAX_TURNS + 3):
        stale.note_values(number, ["v0"])
    assert not stale.read_by(1) and stale.read_by(MAX_TURNS + 2)


def test_a_check_over_budget_goes_on_where_it_stopped() -> None:
    stale = StaleAnswers(KernelNamespace({f"v{i}": [i] for i in range(30)}), check_seconds=0.0)
    stale.note_values(1, [f"v{i}" for i in range(30)])
    for i in range(30):
        stale.namespace.user_ns[f"v{i}"].append(0)
    seen: list[str] = []
    for _ in range(40):  # a zero budget still checks one name a time
        for turn in stale.check():
            seen = list(turn.changed)
    assert sorted(seen) == sorted(f"v{i} changed" for i in range(30))


def test_the_names_a_cell_mentions_are_checked_first_whatever_the_budget() -> None:
    stale = StaleAnswers(KernelNamespace({f"v{i}": [i] for i in range(30)}), check_seconds=0.0)
    stale.note_values(1, [f"v{i}" for i in range(30)])
    stale.namespace.user_ns["v17"].append(0)
    stale.namespace.user_ns["v23"].append(0)
    assert stale.check("v17.append(0); v23.append(0)  # v99 is not watched") == [
        StaleTurn(1, ("v17 changed", "v23 changed"))
    ]
    assert stale.checked == 2


class Hangs:
    calls = 0  # how often something asked it (a value given up on must not be asked again)

    def __repr__(self) -> str:
        Hangs.calls += 1
        while True:
            pass


class HangsInLen:
    calls = 0

    def __len__(self) -> int:  # noqa: PLE0303  (it never returns)
        HangsInLen.calls += 1
        while True:
            pass


class Raises:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_a_hostile_value_is_bounded_then_unwatched() -> None:
    stale = StaleAnswers(
        KernelNamespace({"hangs": Hangs(), "long": HangsInLen(), "raises": Raises(), "df": frame()}),
        value_seconds=0.05,
    )
    stale.note_values(1, ["hangs", "long", "raises", "df"])  # each stopped at its bound, once
    assert set(stale.unwatched) == {"hangs", "long"}
    assert "took over 0.05 s" in stale.unwatched["hangs"]
    asked = (Hangs.calls, HangsInLen.calls)
    assert min(asked) >= 1  # each was asked once, and given up on
    assert stale.check() == []  # a raising repr fingerprints by type and id: unchanged
    assert (Hangs.calls, HangsInLen.calls) == asked  # the values given up on are not asked again
    stale.namespace.user_ns["df"].loc[0, "a"] = 7
    assert stale.check() == [StaleTurn(1, ("df changed",))]


def test_a_value_that_turns_hostile_after_the_turn() -> None:
    holder: list[Any] = [1]
    stale = StaleAnswers(KernelNamespace({"box": holder}), value_seconds=0.05)
    stale.note_values(1, ["box"])
    holder.append(Hangs())
    assert stale.check() == []  # stopped at its bound: not watched any more, not called stale
    assert "box" in stale.unwatched
    assert stale.check() == []


class FakeSession:
    def __init__(self) -> None:
        self.current_turn = 0
        self.transcript: ListenerSet[[AgentSessionUpdate]] = ListenerSet("on_transcript")
        self.sources: list[Callable[[], Iterable[StaleTurn]]] = []

    def on_transcript(self, listener: Callable[[AgentSessionUpdate], None]) -> Disposable:
        return self.transcript.add(listener)

    def add_stale_source(self, source: Callable[[], Iterable[StaleTurn]]) -> Disposable:
        self.sources.append(source)
        return Disposable(lambda: self.sources.remove(source))


def test_watch_seals_at_the_session_s_turn_end() -> None:
    session = FakeSession()
    stale = tracker(df=frame())
    watching = stale.watch(session)
    session.current_turn = 2
    stale.tool_read("inspect_variable", {"name": "df"})
    session.transcript.emit(AgentSessionUpdate(kind="agent_message_chunk", raw={}))
    assert not stale.read_by(2)
    session.transcript.emit(AgentSessionUpdate(kind="turn_end", raw={}))
    assert stale.read_by(2)
    stale.namespace.user_ns["df"] = frame().head(1)
    (source,) = session.sources
    assert list(source()) == [StaleTurn(2, ("df changed",))]  # report() checks first
    session.transcript.emit(TurnUndoneLine(turns=[2]).update())  # an undo took the turn back
    assert list(source()) == [] and not stale.read_by(2)
    watching.dispose()
    assert session.sources == [] and not session.transcript


async def test_handle_stale_turns_merges_its_sources(workspace: Workspace) -> None:
    async with await workspace.service().sessions.connect("demo") as handle:
        assert handle.stale_turns() == []
        first = handle.add_stale_source(lambda: [StaleTurn(2, ("df changed",))])
        handle.add_stale_source(
            lambda: [StaleTurn(2, ("df changed", "cell 3 changed")), StaleTurn(1, ("x changed",))]
        )

        def broken() -> list[StaleTurn]:
            raise RuntimeError("a broken source")

        handle.add_stale_source(broken)
        assert handle.stale_turns() == [
            StaleTurn(1, ("x changed",)),
            StaleTurn(2, ("df changed", "cell 3 changed")),
        ]
        first.dispose()
        first.dispose()
        assert len(handle.stale_turns()) == 2
