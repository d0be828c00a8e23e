"""The cell tools (``kernel_tools/notebook_tools.py``) on a notebook kept by a real ``YNotebook`` behind a
channel played in-process: what is asked, what changes, and every bad input as one line."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from jupyter_ydoc import YNotebook

from silo_nb.experiments import PermissionPolicy
from silo_nb.kernel_tools.code_runner import CodeResult
from silo_nb.kernel_tools.notebook_tools import MAX_CHANGES_PER_TURN, NotebookTools, outputs_of
from silo_nb.kernel_tools.turn_parts import CellUndo
from silo_nb.model import AgentPermissionOption, AgentPermissionRequest, AgentToolCall, KernelToolLine
from silo_nb.server import NO_CHANNEL, NotebookChannel, NotebookUnavailable
from silo_nb.server.cell_ops import CellOpError, apply


class LocalChannel(NotebookChannel):
    """The channel with the server's side in-process: requests applied to a real shared notebook."""

    def __init__(self, nb: YNotebook) -> None:
        super().__init__("/nowhere", "token", "work/analysis.ipynb")
        self.nb, self.requests = nb, []

    async def request(self, op: str, **fields: Any) -> dict[str, Any]:
        self.requests.append(op)
        try:
            return {"ok": True, **apply(self.nb, {"op": op, **fields})}
        except CellOpError as exc:
            raise NotebookUnavailable(str(exc)) from None


class Call:
    """A journaled call whose question is answered by ``answer`` (None: nobody answered)."""

    def __init__(self, answer: str | None) -> None:
        self.answer, self.asked, self.states = answer, [], []

    def waiting(self, title: str, *, cell: Mapping[str, Any] | None = None) -> None:
        self.states.append(("waiting", title))

    def running(self, title: str) -> None:
        self.states.append(("running", title))

    async def ask(self, **question: Any) -> str | None:
        self.asked.append(question)
        return self.answer


def notebook() -> YNotebook:
    nb = YNotebook()

    def code(cell_id: str, source: str, count: int) -> dict[str, Any]:
        return {"id": cell_id, "cell_type": "code", "source": source, "metadata": {}, "outputs": [],
                "execution_count": count}  # fmt: skip

    cells = [
        code("a", "df = load()", 1),
        code("p", "%%prompt\nplot it", 2),
        {"id": "m", "cell_type": "markdown", "source": "# Notes", "metadata": {}},
    ]
    nb.set({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    return nb


def sources(nb: YNotebook) -> list[str]:
    return [cell["source"] for cell in nb.get()["cells"]]


def tools(nb: YNotebook, ran: list[str] | None = None) -> tuple[NotebookTools, LocalChannel]:
    channel = LocalChannel(nb)

    def run_code(code: str) -> CodeResult:
        (ran if ran is not None else []).append(code)
        return CodeResult("completed", stdout="plotted\n", value="'done'", images=[b"\x89PNG fake"])

    made = NotebookTools(run_code=run_code, channel=lambda: channel, execution_count=lambda: 9)
    made.prompt_at("p")
    return made, channel


async def test_read_notebook_names_ids_types_and_the_prompt_cell() -> None:
    made, _ = tools(notebook())
    answer = await made.call("read_notebook", {}, Call(None))
    assert answer.status == "completed"
    assert "## cell p (code, In [2]) ← the running %%prompt" in answer.text
    assert "## cell m (markdown)" in answer.text and answer.text.startswith("work/analysis.ipynb: 3 cells.")


async def test_an_insert_is_asked_with_its_diff_and_goes_below_the_prompt_then_below_the_last_insert() -> (
    None
):
    nb = notebook()
    made, _ = tools(nb)
    call = Call("apply")
    first = await made.call("insert_cell", {"source": "df.plot()"}, call)
    second = await made.call("insert_cell", {"source": "df.describe()"}, Call("apply"))
    assert sources(nb) == ["df = load()", "%%prompt\nplot it", "df.plot()", "df.describe()", "# Notes"]
    assert first.status == "completed" and first.cell_id == nb.get()["cells"][2]["id"] != second.cell_id
    asked = call.asked[0]
    assert asked["kind"] == "edit" and asked["raw_input"]["notebookCell"] is True
    assert [o["name"] for o in asked["options"]] == ["Apply", "Skip"]
    assert asked["content"][0] | {"path": ""} == {
        "type": "diff",
        "path": "",
        "oldText": "",
        "newText": "df.plot()",
    }
    assert call.states == [
        ("waiting", "Insert a code cell after p"),
        ("running", "Insert a code cell after p"),
    ]


async def test_skip_and_no_answer_change_nothing_and_say_so() -> None:
    nb = notebook()
    made, channel = tools(nb)
    skipped = await made.call("edit_cell", {"cell_id": "a", "old": "load()", "new": "load(2)"}, Call("skip"))
    unanswered = await made.call("delete_cell", {"cell_id": "m"}, Call(None))
    assert skipped.status == unanswered.status == "refused"
    assert "skipped it" in skipped.text and "no answer" in unanswered.text
    assert sources(nb) == ["df = load()", "%%prompt\nplot it", "# Notes"]
    assert "edit" not in channel.requests and "delete" not in channel.requests
    assert skipped.diff == ("df = load()", "df = load(2)")  # the card still shows what was proposed


async def test_edit_replace_move_and_delete() -> None:
    nb = notebook()
    made, _ = tools(nb)
    await made.call("edit_cell", {"cell_id": "a", "old": "load()", "new": "load(2)"}, Call("apply"))
    await made.call("replace_cell", {"cell_id": "m", "source": "# Findings"}, Call("apply"))
    await made.call("move_cell", {"cell_id": "m"}, Call("apply"))
    await made.call("delete_cell", {"cell_id": "a"}, Call("apply"))
    assert sources(nb) == ["# Findings", "%%prompt\nplot it"]


async def test_run_cell_asks_like_run_code_runs_and_writes_the_outputs_into_the_cell() -> None:
    nb = notebook()
    ran: list[str] = []
    made, _ = tools(nb, ran)
    call = Call("run")
    answer = await made.call("run_cell", {"cell_id": "a"}, call)
    assert ran == ["df = load()"] and answer.status == "completed" and answer.cell_id == "a"
    assert call.asked[0]["kind"] == "code" and call.asked[0]["raw_input"]["code"] == "df = load()"
    cell = nb.get()["cells"][0]
    assert cell["execution_count"] == 9
    assert [o["output_type"] for o in cell["outputs"]] == ["stream", "display_data", "execute_result"]
    refused = await made.call("run_cell", {"cell_id": "a"}, Call("skip"))
    assert refused.status == "refused" and ran == ["df = load()"]


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [
        ("edit_cell", {"cell_id": "zz", "old": "x", "new": "y"}, "No cell has the id 'zz'"),
        ("edit_cell", {"cell_id": "a", "old": "nothing", "new": "y"}, "is not in cell a"),
        ("edit_cell", {"cell_id": "a", "old": "", "new": "y"}, "is not in cell a"),
        ("insert_cell", {"source": 3}, "source must be a string"),
        ("insert_cell", {"source": "x", "after": "zz"}, "No cell has the id 'zz'"),
        ("insert_cell", {"source": "x" * 10_000_000}, "at most"),
        ("move_cell", {"cell_id": "a", "after": "zz"}, "No cell has the id 'zz'"),
        ("run_cell", {"cell_id": "m"}, "markdown cell: only code cells run"),
        ("run_cell", {"cell_id": "zz"}, "No cell has the id 'zz'"),
        ("explode", {}, "Unknown tool 'explode'"),
    ],
)
async def test_a_bad_call_is_one_line_asks_nothing_and_changes_nothing(
    tool: str, arguments: dict[str, Any], says: str
) -> None:
    nb = notebook()
    before = nb.get()
    made, _ = tools(nb)
    call = Call("apply")
    answer = await made.call(tool, arguments, call)
    assert answer.status == "failed" and says in answer.text and "\n" not in answer.text
    assert call.asked == [] and nb.get() == before


async def test_no_server_is_one_line_and_the_turn_goes_on() -> None:
    made = NotebookTools(run_code=lambda code: CodeResult("completed"), channel=lambda: NO_CHANNEL)
    answer = await made.call("insert_cell", {"source": "x"}, Call("apply"))
    assert answer.status == "failed" and answer.text == NO_CHANNEL


async def test_a_turn_makes_a_bounded_number_of_changes_and_the_next_turn_starts_again() -> None:
    nb = notebook()
    made, _ = tools(nb)
    for _ in range(MAX_CHANGES_PER_TURN):
        assert (await made.call("insert_cell", {"source": "x"}, Call("apply"))).status == "completed"
    over = await made.call("insert_cell", {"source": "x"}, Call("apply"))
    assert over.status == "failed" and "ask the user to go on" in over.text
    made.prompt_at("p")
    assert (await made.call("insert_cell", {"source": "x"}, Call("apply"))).status == "completed"


def test_outputs_carry_text_figures_and_the_traceback() -> None:
    failed = CodeResult("error", stdout="a\n", traceback="Traceback…\nKeyError: 'x'", images=[b"png"])
    outputs = outputs_of(failed, 4)
    assert [o["output_type"] for o in outputs] == ["stream", "display_data", "error"]
    assert outputs[-1]["ename"] == "KeyError" and outputs[-1]["evalue"] == "'x'"


def _cell_request(kind: str, raw_input: Mapping[str, Any]) -> AgentPermissionRequest:
    options = [
        AgentPermissionOption(option_id="apply", name="Apply", kind="allow_once"),
        AgentPermissionOption(option_id="skip", name="Skip", kind="reject_once"),
    ]
    call = AgentToolCall(tool_call_id="k1", title="Insert a code cell", kind=kind, raw_input=dict(raw_input))
    return AgentPermissionRequest(
        tool_call_id="k1", title="Insert a code cell", tool_call=call, options=tuple(options)
    )


@pytest.mark.parametrize(
    ("rules", "chosen"),
    [(("allow cells",), "apply"), (("allow edit",), None), (("allow *",), None), (("reject cells",), "skip")],
)
def test_cell_changes_are_allowed_only_by_a_rule_naming_cells(
    rules: tuple[str, ...], chosen: str | None
) -> None:
    request = _cell_request("edit", {"notebookCell": True, "op": "insert"})
    option_id, _why = PermissionPolicy(*rules).decide(request, cwd="/tmp")
    assert option_id == chosen


async def test_a_cell_the_user_edits_while_the_change_waits_stays_the_users() -> None:
    nb = notebook()
    made, _ = tools(nb)

    class TypingMeanwhile(Call):
        async def ask(self, **question: Any) -> str | None:
            nb.set_cell(
                0, source=sources(nb)[0] + "  # mine"
            )  # the user types in the cell, then clicks Apply
            return await super().ask(**question)

    answer = await made.call(
        "edit_cell", {"cell_id": "a", "old": "load()", "new": "load(2)"}, TypingMeanwhile("apply")
    )
    assert answer.status == "failed" and "changed while the change waited" in answer.text
    assert sources(nb)[0] == "df = load()  # mine"
    deleted = await made.call("delete_cell", {"cell_id": "a"}, TypingMeanwhile("apply"))
    assert deleted.status == "failed" and sources(nb)[0] == "df = load()  # mine  # mine"


async def test_every_applied_change_can_be_taken_back_newest_first() -> None:
    from silo_nb.kernel_tools.notebook_tools import undo_changes

    nb = notebook()
    before = nb.get()["cells"]
    made, channel = tools(nb)
    answers = [
        await made.call("insert_cell", {"source": "df.plot()"}, Call("apply")),
        await made.call("edit_cell", {"cell_id": "a", "old": "load()", "new": "load(2)"}, Call("apply")),
        await made.call("move_cell", {"cell_id": "m", "after": "a"}, Call("apply")),
        await made.call("delete_cell", {"cell_id": "p"}, Call("apply")),
    ]
    assert sources(nb) == ["df = load(2)", "# Notes", "df.plot()"]
    said = await undo_changes([answer.undo for answer in answers if answer.undo], lambda: channel)
    assert [line.split(": ", 1)[1] for line in said] == [
        "restored (put back)",
        "restored (moved back)",
        "restored (its source put back)",
        "restored (the inserted cell removed)",
    ]
    after = nb.get()["cells"]
    assert [(c["id"], c["source"], c["cell_type"]) for c in after] == [
        (c["id"], c["source"], c["cell_type"]) for c in before
    ]


async def test_a_cell_changed_since_is_left_as_it_is_and_said_so() -> None:
    from silo_nb.kernel_tools.notebook_tools import undo_changes

    nb = notebook()
    made, channel = tools(nb)
    edited = await made.call("edit_cell", {"cell_id": "a", "old": "load()", "new": "load(2)"}, Call("apply"))
    nb.set_cell(0, source="df = load(3)")  # the user changed it after the turn
    assert edited.undo is not None
    (said,) = await undo_changes([edited.undo], lambda: channel)
    assert said.startswith("cell a: not restored — Cell a changed") and sources(nb)[0] == "df = load(3)"
    assert await undo_changes([edited.undo], lambda: NO_CHANNEL) == [NO_CHANNEL]


async def test_a_channel_that_answers_nonsense_is_a_failed_call_not_an_exception() -> None:
    class Broken(LocalChannel):
        async def request(self, op: str, **fields: Any) -> dict[str, Any]:
            return {"ok": True}  # no "cells"

    made = NotebookTools(run_code=lambda code: CodeResult("completed"), channel=lambda: Broken(notebook()))
    answer = await made.call("read_notebook", {}, Call(None))
    assert answer.status == "failed" and answer.text.startswith("read_notebook failed: KeyError")


async def test_a_turns_cell_insert_and_edit_are_undone_by_its_cells_part() -> None:
    nb = notebook()
    made, channel = tools(nb)
    inserted = await made.call("insert_cell", {"source": "df.plot()"}, Call("apply"))
    edited = await made.call("edit_cell", {"cell_id": "a", "old": "load()", "new": "load(2)"}, Call("apply"))
    assert sources(nb) == ["df = load(2)", "%%prompt\nplot it", "df.plot()", "# Notes"]
    journal = [
        KernelToolLine.written({"callId": str(n), "tool": tool, "status": "completed", "undo": answer.undo})
        for n, (tool, answer) in enumerate((("insert_cell", inserted), ("edit_cell", edited)))
    ]
    items = await CellUndo(channel=lambda: channel).undo_turn(1, journal)
    assert sources(nb) == [
        "df = load()",
        "%%prompt\nplot it",
        "# Notes",
    ]  # newest first: the edit, the insert
    assert [(i.part, i.subject, i.restored) for i in items] == [
        ("cells", "cell a", True),
        ("cells", f"cell {inserted.cell_id}", True),
    ]
    assert items[1].said == "the inserted cell removed"
    # Changed since by someone else: left as it is, said so.
    again = await made.call("insert_cell", {"source": "df.head()"}, Call("apply"))
    await channel.request("replace", cell_id=again.cell_id, source="mine now")
    line = KernelToolLine.written(
        {"callId": "9", "tool": "insert_cell", "status": "completed", "undo": again.undo}
    )
    [kept] = await CellUndo(channel=lambda: channel).undo_turn(2, [line])
    assert not kept.restored and "mine now" in sources(nb)
    assert await CellUndo(channel=lambda: NO_CHANNEL).undo_turn(3, [line]) != []  # no notebook: said why
