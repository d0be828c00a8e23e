"""The tools on the open notebook: the agent reads it and writes, runs and revises its cells, each change
reviewed by the user first.

- ``read_notebook`` reads (no question asked): every cell's id, type, source, outputs as text, and which
  cell holds the running ``%%prompt``.
- ``insert_cell``, ``edit_cell``, ``replace_cell``, ``delete_cell``, ``move_cell``: each is asked first, as a
  permission of kind ``edit`` whose tool call carries the cell's diff (``rawInput.notebookCell``: policies
  need ``allow cells`` by name; ``allow *`` never allows it), answered **Apply** / **Skip**; only then
  made, through the Jupyter server's channel (``silo_nb.server``) on the shared notebook the page shows.
- ``run_cell`` asks like ``run_code`` (kind ``code``), runs the cell's source in this kernel like a cell,
  and writes its outputs (text, the traceback, figures) into that cell with an execution count.
- ``insert_cell`` with no ``after`` goes below the last cell this turn inserted, else below the prompt's
  cell, else at the end.
- Every answer names the cell it touched (``cell_id`` in the structured content); every failure is one
  line the agent can read, and the turn goes on (no server with collaboration, an unknown id, a bound).
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from silo_nb.kernel_tools.code_runner import CodeResult
from silo_nb.kernel_tools.limits import OUTPUT_CHARS
from silo_nb.kernel_tools.report_text import cut
from silo_nb.kernel_tools.stale_answers import NotebookCell
from silo_nb.kernel_tools.wire import CELL_TOOL_NAMES
from silo_nb.server import MAX_SOURCE_CHARS, NotebookChannel, NotebookUnavailable

__all__ = [
    "APPLY_OPTIONS",
    "CellCall",
    "NotebookTools",
    "ToolAnswer",
    "outputs_of",
    "undo_cell_changes",
    "undo_changes",
    "undo_request",
]

APPLY_OPTIONS = (
    {"optionId": "apply", "name": "Apply", "kind": "allow_once"},
    {"optionId": "skip", "name": "Skip", "kind": "reject_once"},
)
RUN_OPTIONS = (
    {"optionId": "run", "name": "Run it", "kind": "allow_once"},
    {"optionId": "skip", "name": "Don't run", "kind": "reject_once"},
)
MAX_CHANGES_PER_TURN = 200  # the profile's cell_changes_per_turn, by default


def _no_cell(cell_id: Any) -> str:
    return f"No cell has the id {cell_id!r} in this notebook (read_notebook lists them)."


class CellCall(Protocol):
    """What a tool needs of the journaled call (``sessions``' ``ClientToolCall``)."""

    def waiting(self, title: str, *, cell: Mapping[str, Any] | None = None) -> None: ...

    def running(self, title: str) -> None: ...

    async def ask(
        self,
        *,
        title: str,
        kind: str,
        raw_input: Mapping[str, Any],
        options: Any,
        content: Any = (),
    ) -> str | None: ...


class ToolAnswer:
    """A tool's result: status, the agent's text, the cell it touched, the diff the card shows, and for
    ``run_cell`` the run (its images)."""

    def __init__(
        self,
        status: str,
        text: str,
        *,
        cell_id: str | None = None,
        diff: tuple[str, str] | None = None,
        run: CodeResult | None = None,
        undo: dict[str, Any] | None = None,
        read: Sequence[NotebookCell] = (),
    ) -> None:
        self.status, self.text, self.cell_id, self.diff, self.run = status, text, cell_id, diff, run
        self.undo = undo  # the request that takes an applied change back
        self.read = read  # read_notebook: the cells it showed (but the prompt's), for stale answers


def _str(arguments: Mapping[str, Any], name: str, *, required: bool = True) -> str | None:
    value = arguments.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string.")
    return value


def undo_request(
    tool: str, cell_id: str, change: Mapping[str, Any], request: Mapping[str, Any]
) -> dict[str, Any]:
    """The channel request that takes an applied change back; it names what the cell must still hold
    (``expect``), so a cell changed since is left as it is."""
    before, after = change.get("before"), change.get("after")
    if tool == "insert_cell":
        return {"op": "delete", "cell_id": cell_id, "expect": after}
    if tool in ("edit_cell", "replace_cell"):
        return {"op": "replace", "cell_id": cell_id, "source": before, "expect": after}
    if tool == "delete_cell":
        cell = change.get("cell") or {}
        return {"op": "insert", "cell_id": cell_id, "source": before, "index": change.get("index"),
                "cell_type": cell.get("cell_type", "code")}  # fmt: skip
    return {"op": "move", "cell_id": cell_id, "index": change.get("from")}  # move_cell


async def undo_cell_changes(
    undos: Sequence[Mapping[str, Any]],
    channel: Callable[[], NotebookChannel | str] = NotebookChannel.from_environment,
) -> list[tuple[str, bool, str]]:
    """Take applied cell changes back, the last first: ``(cell, restored, what was done or why not)`` per
    change (a cell changed since is left as it is: the person who changed it wins). With no open notebook
    to change, one entry says why."""
    found = channel()
    if isinstance(found, str):
        return [("notebook", False, found)]
    done: list[tuple[str, bool, str]] = []
    for undo in reversed(undos):
        cell = f"cell {undo.get('cell_id')}"
        try:
            await found.request(**dict(undo))
            done.append((cell, True, _UNDONE.get(str(undo.get("op")), "undone")))
        except NotebookUnavailable as exc:
            done.append((cell, False, str(exc)))
    return done


async def undo_changes(
    undos: Sequence[Mapping[str, Any]],
    channel: Callable[[], NotebookChannel | str] = NotebookChannel.from_environment,
) -> list[str]:
    """:func:`undo_cell_changes` as one line per change (``%silo undo-cells``)."""
    done = await undo_cell_changes(undos, channel)
    if len(done) == 1 and done[0][0] == "notebook":
        return [done[0][2]]
    return [f"{c}: restored ({said})" if ok else f"{c}: not restored — {said}" for c, ok, said in done]


_UNDONE = {"delete": "the inserted cell removed", "replace": "its source put back", "insert": "put back",
           "move": "moved back"}  # fmt: skip


def outputs_of(result: CodeResult, execution_count: int | None) -> list[dict[str, Any]]:
    """nbformat outputs for what a run printed, raised, showed and returned."""
    outputs: list[dict[str, Any]] = []
    for name, text in (("stdout", result.stdout), ("stderr", result.stderr)):
        if text:
            outputs.append({"output_type": "stream", "name": name, "text": cut(text, OUTPUT_CHARS)})
    for png in result.images:
        outputs.append(
            {
                "output_type": "display_data",
                "data": {"image/png": base64.b64encode(png).decode()},
                "metadata": {},
            }
        )
    if result.traceback:
        lines = result.traceback.splitlines()
        last = lines[-1] if lines else "Error"
        ename, _, evalue = last.partition(": ")
        outputs.append({"output_type": "error", "ename": ename, "evalue": evalue, "traceback": lines})
    elif result.value is not None:
        outputs.append(
            {
                "output_type": "execute_result",
                "execution_count": execution_count,
                "data": {"text/plain": result.value},
                "metadata": {},
            }
        )
    return outputs


# Runs an allowed piece of code: (the code, the call that runs it) → its result.
GuardRun = Callable[[str, Callable[[], CodeResult]], Awaitable[CodeResult]]


class NotebookTools:
    """The cell tools of one connection (see the module docstring)."""

    def __init__(
        self,
        *,
        run_code: Callable[[str], CodeResult],
        channel: Callable[[], NotebookChannel | str] = NotebookChannel.from_environment,
        execution_count: Callable[[], int | None] = lambda: None,
        max_changes: int = MAX_CHANGES_PER_TURN,
        guard_run: GuardRun | None = None,
    ) -> None:
        self._run_code = run_code
        self._guard_run = guard_run  # around each allowed run: the undo's variable checkpoint
        self._channel = channel
        self._execution_count = execution_count
        self._max_changes = max_changes
        self._prompt_cell: str | None = None  # the cell whose turn the calls belong to
        self._inserted: str | None = None  # the last cell this turn inserted
        self._turn_changes = 0

    def prompt_at(self, cell_id: str | None) -> None:
        """A turn starts from ``cell_id``: inserts go below it again, and the per-turn bound restarts."""
        self._prompt_cell, self._inserted, self._turn_changes = cell_id, None, 0

    async def call(self, tool: str, arguments: Mapping[str, Any], call: CellCall) -> ToolAnswer:
        """One tool call; never raises."""
        channel = self._channel()
        if isinstance(channel, str):
            return ToolAnswer("failed", channel)
        try:
            if tool == "read_notebook":
                return await self._read(channel)
            if tool == "run_cell":
                return await self._run_cell(channel, arguments, call)
            if self._turn_changes >= self._max_changes:
                limit = f"{self._max_changes} cell changes (the profile's cell_changes_per_turn)"
                return ToolAnswer("failed", f"This turn made {limit} already: ask the user to go on.")
            return await self._change(channel, tool, arguments, call)
        except (ValueError, NotebookUnavailable) as exc:
            return ToolAnswer("failed", str(exc))
        except Exception as exc:  # a bug here must not leave the call unanswered (its card "running")
            return ToolAnswer("failed", f"{tool} failed: {type(exc).__name__}: {cut(str(exc), 500)}")

    async def _cells(self, channel: NotebookChannel) -> list[dict[str, Any]]:
        return list((await channel.request("read"))["cells"])

    async def _read(self, channel: NotebookChannel) -> ToolAnswer:
        cells = await self._cells(channel)
        prompt_cell = self._prompt_cell
        lines = [f"{channel.notebook}: {len(cells)} cells."]
        for cell in cells:
            count = cell.get("execution_count")
            mark = " ← the running %%prompt" if cell["id"] == prompt_cell else ""
            head = f"## cell {cell['id']} ({cell['cell_type']}{f', In [{count}]' if count else ''}){mark}"
            lines += [head, cell["source"]]
            if cell.get("outputs"):
                lines += ["--- outputs:", cell["outputs"]]
        read = [
            NotebookCell(str(cell["id"]), str(cell["source"]), position)
            for position, cell in enumerate(cells, 1)
            if cell["id"] != prompt_cell
        ]
        return ToolAnswer("completed", cut("\n".join(lines), OUTPUT_CHARS), read=read)

    async def _change(
        self, channel: NotebookChannel, tool: str, arguments: Mapping[str, Any], call: CellCall
    ) -> ToolAnswer:
        cells = await self._cells(channel)
        sources = {cell["id"]: cell["source"] for cell in cells}

        def known(name: str) -> str:
            cell_id = _str(arguments, name)
            assert cell_id is not None
            if cell_id not in sources:
                raise ValueError(_no_cell(cell_id))
            return cell_id

        request: dict[str, Any]
        if tool == "insert_cell":
            source = _str(arguments, "source") or ""
            cell_type = arguments.get("cell_type") or "code"
            after = _str(arguments, "after", required=False)
            if after is None:
                after = next((c for c in (self._inserted, self._prompt_cell) if c in sources), None)
            elif after not in sources:
                raise ValueError(_no_cell(after))
            title, diff = f"Insert a {cell_type} cell" + (f" after {after}" if after else ""), ("", source)
            request = {"op": "insert", "source": source, "cell_type": cell_type, "after": after}
        elif tool == "edit_cell":
            cell_id = known("cell_id")
            old, new = _str(arguments, "old") or "", _str(arguments, "new") or ""
            found = sources[cell_id].count(old) if old else 0
            if found != 1:
                where = "is not in" if not found else f"is {found} times in"
                raise ValueError(
                    f"The text to replace {where} cell {cell_id}: give old text found exactly once."
                )
            title, diff = f"Edit cell {cell_id}", (sources[cell_id], sources[cell_id].replace(old, new, 1))
            request = {"op": "edit", "cell_id": cell_id, "old": old, "new": new, "expect": sources[cell_id]}
        elif tool == "replace_cell":
            cell_id = known("cell_id")
            source = _str(arguments, "source") or ""
            title, diff = f"Replace cell {cell_id}", (sources[cell_id], source)
            request = {"op": "replace", "cell_id": cell_id, "source": source, "expect": sources[cell_id]}
        elif tool == "delete_cell":
            cell_id = known("cell_id")
            title, diff = f"Delete cell {cell_id}", (sources[cell_id], "")
            request = {"op": "delete", "cell_id": cell_id, "expect": sources[cell_id]}
        elif tool == "move_cell":
            cell_id = known("cell_id")
            after = _str(arguments, "after", required=False)
            if after is not None and after not in sources:
                raise ValueError(_no_cell(after))
            where = f"after {after}" if after else "to the top"
            title, diff = f"Move cell {cell_id} {where}", (sources[cell_id], sources[cell_id])
            request = {"op": "move", "cell_id": cell_id, "after": after}
        else:
            raise ValueError(f"Unknown tool {tool!r}: the notebook tools are {', '.join(CELL_TOOL_NAMES)}.")
        if max(len(diff[0]), len(diff[1])) > MAX_SOURCE_CHARS:
            raise ValueError(f"A cell takes at most {MAX_SOURCE_CHARS:,} characters: nothing was changed.")
        target = request.get("cell_id")
        proposed = {"cellId": target, "oldSource": diff[0], "newSource": diff[1]} if target else {}
        call.waiting(title, cell=proposed or {"oldSource": diff[0], "newSource": diff[1]})
        choice = await call.ask(
            title=title,
            kind="edit",
            raw_input={"notebookCell": True, "notebook": channel.notebook}
            | {key: value for key, value in request.items() if key != "expect"},
            options=APPLY_OPTIONS,
            content=[
                {
                    "type": "diff",
                    "path": f"{channel.notebook}#{target or 'new cell'}",
                    "oldText": diff[0],
                    "newText": diff[1],
                }
            ],
        )
        if choice != "apply":
            said = "skipped it" if choice is not None else "did not apply it (no answer, or the turn stopped)"
            return ToolAnswer(
                "refused", f"The user {said}: the notebook did not change.", cell_id=target, diff=diff
            )
        call.running(title)
        change = await channel.request(**request)
        self._turn_changes += 1
        cell_id = str(change.get("cellId") or target or "")
        if tool == "insert_cell":
            self._inserted = cell_id
        elif tool == "delete_cell" and self._inserted == cell_id:
            self._inserted = None
        undo = undo_request(tool, cell_id, change, request)
        text = f"{title}: done (cell {cell_id})."
        return ToolAnswer("completed", text, cell_id=cell_id, diff=diff, undo=undo)

    async def _run_cell(
        self, channel: NotebookChannel, arguments: Mapping[str, Any], call: CellCall
    ) -> ToolAnswer:
        cell_id = _str(arguments, "cell_id")
        cell = next((c for c in await self._cells(channel) if c["id"] == cell_id), None)
        if cell is None:
            raise ValueError(_no_cell(cell_id))
        if cell["cell_type"] != "code":
            raise ValueError(f"Cell {cell_id} is a {cell['cell_type']} cell: only code cells run.")
        if not cell["source"].strip():
            raise ValueError(f"Cell {cell_id} is empty: nothing to run.")
        title = f"Run cell {cell_id}"
        call.waiting(title)
        choice = await call.ask(
            title=title,
            kind="code",
            raw_input={"code": cell["source"], "cellId": cell_id, "notebook": channel.notebook},
            options=RUN_OPTIONS,
        )
        if choice != "run":
            said = (
                "rejected it" if choice is not None else "did not allow it (no answer, or the turn stopped)"
            )
            return ToolAnswer("refused", f"The user {said}: the cell did not run.", cell_id=cell_id)
        call.running(title)
        source = cell["source"]
        if self._guard_run is not None:
            result = await self._guard_run(source, lambda: self._run_code(source))
        else:
            result = self._run_code(source)
        count = self._execution_count()
        await channel.request(
            "set_outputs", cell_id=cell_id, outputs=outputs_of(result, count), execution_count=count
        )
        return ToolAnswer(result.status, cut(result.text(), OUTPUT_CHARS), cell_id=cell_id, run=result)
