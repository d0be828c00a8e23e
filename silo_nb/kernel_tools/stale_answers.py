"""Stale answers (issue 32, step 3): what each turn of a session read of the kernel and the notebook, and
which of it changed since the turn's answer.

- What a turn read: ``inspect_variable`` (the value), ``list_variables`` (the first :data:`MAX_LISTED`
  names listed: their type and shape, as the list showed them), ``read_cells`` and ``read_notebook`` (each
  cell's source, by its id: ``read_cells``' inputs only where the cell that ran as ``In [n]`` is known),
  each recorded by the kernel tool server as it answers (:meth:`StaleAnswers.tool_read`); and
  ``%%prompt --attach NAME`` and ``@name`` (the notebook layer: :meth:`StaleAnswers.note_values`). At most
  :data:`MAX_VALUES` values, :data:`MAX_LISTED` listed names and :data:`MAX_CELLS` cells per turn, for the
  latest :data:`MAX_TURNS` turns that read something.
- The baseline is taken at the END of the turn (:meth:`seal`, on the session's ``turn_end``): what the
  agent's own ``run_code`` changed inside the turn is part of its answer, not a reason to call it stale.
  A value's baseline is its :func:`~.fingerprints.fingerprint` (shape, dtypes, sampled rows); a listed
  name's, its type and shape (read as ``list_variables`` reads them: none of the user's code runs).
- :meth:`check` (after each user cell: the notebook layer's ``post_run_cell`` hook) fingerprints the names
  still watched and compares: a changed or deleted one makes its turns stale ("df changed", "df was
  deleted"). A cell the turn read that runs again (:meth:`cell_ran`, from the same hook) makes it stale
  too ("cell 3 changed", or "cell 3 ran again" when its source is the same). A cell edited and not run is
  not seen. Stale stays stale: a changed subject is no longer watched.
- Bounded: a check first fingerprints the watched names the cell that ran mentions (``df.loc[0, "a"] =
  99`` → ``df``), then the others in turn until :data:`CHECK_SECONDS` have gone (the names left go first
  next time: a change made out of sight, by a function, is seen a few cells later at worst); a value
  whose fingerprint runs past :data:`VALUE_SECONDS` (a ``__repr__`` or ``__len__`` that hangs: stopped
  by ``guard.bounded_call``) is no longer watched, and listed in :attr:`unwatched`. A fingerprint never
  raises; nothing here raises into the caller.
- :meth:`watch` ties a tracker to a session: its ``turn_end`` seals the running turn's reads, and
  ``handle.stale_turns()`` asks :meth:`report`.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from silo_nb.kernel_tools.fingerprints import fingerprint
from silo_nb.kernel_tools.guard import ToolTimeout, bounded_call
from silo_nb.kernel_tools.namespace import KernelNamespace
from silo_nb.kernel_tools.static_view import builtin_length, class_names, library_family
from silo_nb.model import TURN_END_KIND, AgentSessionUpdate, StaleTurn, TurnUndoneLine
from silo_nb.util import Disposable

__all__ = [
    "CHECK_SECONDS",
    "MAX_CELLS",
    "MAX_LISTED",
    "MAX_TURNS",
    "MAX_VALUES",
    "VALUE_SECONDS",
    "NotebookCell",
    "StaleAnswers",
    "StaleSession",
]

log = logging.getLogger("silo_nb.kernel_tools")

MAX_VALUES = 100  # values a turn read that are watched (inspect_variable, --attach, @name)
MAX_LISTED = 100  # names of a turn's list_variables answers that are watched (type and shape)
MAX_CELLS = 100  # cells a turn read that are watched (read_cells, read_notebook)
MAX_TURNS = 50  # the latest turns that read something; an older one is no longer watched
CHECK_SECONDS = 0.004  # a check's fingerprints stop here; the names left go first next time
SEAL_SECONDS = 1.0  # a turn's end: its fingerprints stop here (the names left are not watched)
VALUE_SECONDS = 0.25  # a fingerprint running this far past the budget is stopped, its name unwatched
MAX_CELL_RUNS = 1_000  # execution counts remembered with the id of the cell that ran as that count
SOURCE_CHARS = 20_000  # of a cell's source, read for the names it mentions
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

VALUE, LISTED = "value", "listed"
_SHAPED = ("numpy", "pandas-dataframe", "pandas-series", "polars-dataframe", "polars-series")
_ABSENT = object()

Key = tuple[str, str]  # (VALUE or LISTED, name)


@dataclass(frozen=True)
class NotebookCell:
    """A cell as ``read_notebook`` showed it: its id, source and place (1-based)."""

    cell_id: str
    source: str
    position: int


class StaleSession(Protocol):
    """What :meth:`StaleAnswers.watch` needs of a session (an ``AgentSessionHandle`` has it)."""

    @property
    def current_turn(self) -> int: ...

    def on_transcript(self, listener: Callable[[AgentSessionUpdate], None]) -> Disposable: ...

    def add_stale_source(self, source: Callable[[], Iterable[StaleTurn]]) -> Disposable: ...


@dataclass
class _Reads:
    """What one turn read: baselines by name (None while the turn runs), cells by id (label, source)."""

    values: dict[str, str | None] = field(default_factory=dict)
    listed: dict[str, str | None] = field(default_factory=dict)
    cells: dict[str, tuple[str, str]] = field(default_factory=dict)
    changed: list[str] = field(default_factory=list)
    reported: int = 0  # how many of ``changed`` the last check already reported

    def __bool__(self) -> bool:
        return bool(self.values or self.listed or self.cells)


def _listed_mark(value: Any) -> str:
    """Type and shape as ``list_variables`` reads them (none of the user's code runs)."""
    module, qualname = class_names(type(value))
    family = library_family(value)
    try:
        shape: Any = tuple(int(n) for n in value.shape) if family in _SHAPED else builtin_length(value)
    except Exception:
        shape = "?"
    return f"{module}.{qualname}:{shape}"


class StaleAnswers:
    """What each turn of one session read, and what of it changed since (see the module docstring)."""

    def __init__(
        self,
        namespace: KernelNamespace,
        *,
        check_seconds: float = CHECK_SECONDS,
        value_seconds: float = VALUE_SECONDS,
    ) -> None:
        self.namespace = namespace
        self.check_seconds = check_seconds
        self.value_seconds = value_seconds
        self.unwatched: dict[str, str] = {}  # name -> why it is no longer watched
        self.checks = 0
        self.checked = 0  # names the last check fingerprinted
        self._running = _Reads()  # the running turn's reads: sealed at its end
        self._turns: dict[int, _Reads] = {}  # sealed turns, oldest first
        self._watched: dict[Key, set[int]] = {}  # a name still watched -> the turns that read it
        self._cells: dict[str, set[int]] = {}  # a cell id still watched -> the turns that read it
        self._cell_ids: dict[int, str] = {}  # execution count -> the id of the cell that ran as it
        self._cursor = 0

    # -- what a turn read ---------------------------------------------------------------------------

    def tool_read(self, tool: str, arguments: Any, *, cells: Sequence[NotebookCell] = ()) -> None:
        """A reading tool answered the running turn (``cells``: what ``read_notebook`` showed)."""
        try:
            self._tool_read(tool, arguments if isinstance(arguments, Mapping) else {}, cells)
        except Exception:  # never into the tool's answer
            log.exception("stale answers: could not note what %s read", tool)

    def _tool_read(self, tool: str, arguments: Mapping[str, Any], cells: Sequence[NotebookCell]) -> None:
        reads, user_ns = self._running, self.namespace.user_ns
        if tool == "inspect_variable":
            name = arguments.get("name")
            if isinstance(name, str) and name.strip() in user_ns and len(reads.values) < MAX_VALUES:
                reads.values[name.strip()] = None
                reads.listed.pop(name.strip(), None)
        elif tool == "list_variables":
            for name in sorted(name for name, _ in self.namespace.variables())[:MAX_LISTED]:
                if name not in reads.values and len(reads.listed) < MAX_LISTED:
                    reads.listed[name] = None
        elif tool == "read_cells":
            inputs, last = user_ns.get("In"), arguments.get("last", 5)
            if type(inputs) is list and type(last) is int:
                for number in range(max(1, len(inputs) - last), len(inputs)):
                    cell_id = self._cell_ids.get(number)
                    if cell_id is not None and isinstance(inputs[number], str):
                        self._read_cell(reads, cell_id, f"cell In [{number}]", inputs[number])
        elif tool == "read_notebook":
            for cell in cells:
                self._read_cell(reads, cell.cell_id, f"cell {cell.position}", cell.source)

    @staticmethod
    def _read_cell(reads: _Reads, cell_id: str, label: str, source: str) -> None:
        if cell_id in reads.cells or len(reads.cells) < MAX_CELLS:
            reads.cells[cell_id] = (label, source)

    def note_values(self, turn: int, names: Iterable[str]) -> None:
        """Values a finished turn was sent (``--attach NAME``, ``@name``): watched from now on."""
        try:
            reads = _Reads(values=dict.fromkeys(n for n in names if n in self.namespace.user_ns))
            if reads:
                self._seal(turn, reads)
        except Exception:
            log.exception("stale answers: could not note turn %s's attachments", turn)

    def read_by(self, turn: int) -> bool:
        """Whether ``turn`` read something still watched, or went stale already."""
        reads = self._turns.get(turn)
        return reads is not None and (bool(reads) or bool(reads.changed))

    # -- the end of a turn: the baseline ------------------------------------------------------------

    def seal(self, turn: int) -> None:
        """The running turn ended as ``turn``: its reads are fingerprinted now, their baseline."""
        reads, self._running = self._running, _Reads()
        if reads:
            try:
                self._seal(turn, reads)
            except Exception:
                log.exception("stale answers: could not seal turn %s", turn)

    def _seal(self, turn: int, reads: _Reads) -> None:
        keys = [(VALUE, name) for name in reads.values] + [(LISTED, name) for name in reads.listed]
        marks = self._marks(keys, SEAL_SECONDS, each=True)
        target = self._turns.setdefault(turn, _Reads())
        for (kind, name), mark in marks.items():
            kept, cap = (target.values, MAX_VALUES) if kind == VALUE else (target.listed, MAX_LISTED)
            if mark is not None and (kind == VALUE or name not in target.values) and len(kept) < cap:
                kept[name] = mark
                self._watched.setdefault((kind, name), set()).add(turn)
        for cell_id, seen in reads.cells.items():
            if cell_id in target.cells or len(target.cells) < MAX_CELLS:
                target.cells[cell_id] = seen
                self._cells.setdefault(cell_id, set()).add(turn)
        while len(self._turns) > MAX_TURNS:
            self._forget(next(iter(self._turns)))

    def forget(self, turn: int) -> None:
        """Stop watching what turn ``turn`` read (it was undone: its answer is no longer on the record)."""
        if turn in self._turns:
            self._forget(turn)

    def _forget(self, turn: int) -> None:
        reads = self._turns.pop(turn)
        for key in [*((VALUE, n) for n in reads.values), *((LISTED, n) for n in reads.listed)]:
            self._unindex(self._watched, key, turn)
        for cell_id in reads.cells:
            self._unindex(self._cells, cell_id, turn)

    @staticmethod
    def _unindex(index: dict[Any, set[int]], key: Any, turn: int) -> None:
        turns = index.get(key)
        if turns is not None:
            turns.discard(turn)
            if not turns:
                del index[key]

    # -- fingerprints, bounded ----------------------------------------------------------------------

    def _mark(self, key: Key) -> str | None:
        kind, name = key
        value = self.namespace.user_ns.get(name, _ABSENT)
        if value is _ABSENT:
            return None
        return fingerprint(value) if kind == VALUE else _listed_mark(value)

    def _marks(
        self, keys: Sequence[Key], budget: float, *, each: bool = False, first: int = 1
    ) -> dict[Key, str | None]:
        """The marks of ``keys`` in order: the ``first`` keys always (at least one: a check makes progress
        whatever its budget), the others until ``budget`` seconds have gone. A fingerprint that runs past
        its bound is stopped and its name unwatched: the bound is :attr:`value_seconds` from the key's
        start for the ``first`` keys and with ``each`` (a turn's end, where many large values may take
        longer together: armed per key), else from the end of the budget (armed once for the rest of a
        check, which takes a few ms)."""
        done: dict[Key, str | None] = {}
        start = time.perf_counter()
        at = [0]
        first = max(1, first)

        def within() -> bool:
            return at[0] < len(keys) and (at[0] < first or time.perf_counter() - start < budget)

        def run(single: bool) -> None:
            while within():
                done[keys[at[0]]] = self._mark(keys[at[0]])
                at[0] += 1
                if single:
                    return

        while within():
            single = each or at[0] < first
            left = 0.0 if single else max(0.0, budget - (time.perf_counter() - start))
            try:
                bounded_call(left + self.value_seconds, functools.partial(run, single))
            except ToolTimeout:
                self._unwatch(keys[at[0]][1], f"its fingerprint took over {self.value_seconds:g} s")
                at[0] += 1
        return done

    def _unwatch(self, name: str, why: str) -> None:
        self.unwatched[name] = why
        for key in ((VALUE, name), (LISTED, name)):
            for turn in self._watched.pop(key, set()):
                reads = self._turns[turn]
                (reads.values if key[0] == VALUE else reads.listed).pop(name, None)

    # -- after a user's cell ------------------------------------------------------------------------

    def cell_ran(self, cell_id: str | None, source: str, execution_count: int | None) -> None:
        """A user's cell ran (``post_run_cell``): a turn that read it is stale."""
        if isinstance(execution_count, int) and cell_id:
            self._cell_ids[execution_count] = cell_id
            if len(self._cell_ids) > MAX_CELL_RUNS:
                del self._cell_ids[next(iter(self._cell_ids))]
        for turn in self._cells.pop(cell_id or "", set()):
            reads = self._turns[turn]
            label, before = reads.cells.pop(cell_id or "")
            reads.changed.append(f"{label} changed" if source != before else f"{label} ran again")

    def check(self, source: str = "") -> list[StaleTurn]:
        """Compare what is still watched with now (bounded: see the module docstring); the turns that went
        stale, or staler, since the last check. ``source``: the cell that just ran — the watched names it
        mentions are checked first, whatever the budget."""
        self.checks += 1
        try:
            keys = list(self._watched)
            if keys:
                named = set(_NAME.findall(source[:SOURCE_CHARS])) if source else set()
                first = [key for key in keys if key[1] in named]
                rest = [key for key in keys if key[1] not in named]
                cursor = self._cursor % len(rest) if rest else 0
                now = self._marks(first + rest[cursor:] + rest[:cursor], self.check_seconds, first=len(first))
                self._cursor = cursor + sum(1 for key in now if key[1] not in named)
                self.checked = len(now)
                for key, mark in now.items():
                    self._compare(key, mark)
        except Exception:
            log.exception("stale answers: the check failed")
        newly = []
        for turn, reads in self._turns.items():
            if len(reads.changed) > reads.reported:
                reads.reported = len(reads.changed)
                newly.append(StaleTurn(turn, tuple(reads.changed)))
        return newly

    def _compare(self, key: Key, mark: str | None) -> None:
        kind, name = key
        for turn in list(self._watched.get(key, ())):
            reads = self._turns[turn]
            kept = reads.values if kind == VALUE else reads.listed
            if kept.get(name) == mark:
                continue
            kept.pop(name, None)
            self._unindex(self._watched, key, turn)
            said = f"{name} was deleted" if mark is None else f"{name} changed"
            if said not in reads.changed:
                reads.changed.append(said)

    def stale_turns(self) -> list[StaleTurn]:
        """The stale turns as the last check left them, oldest first."""
        return [StaleTurn(turn, tuple(reads.changed)) for turn, reads in self._turns.items() if reads.changed]

    def report(self) -> list[StaleTurn]:
        """:meth:`check`, then :meth:`stale_turns` (what ``handle.stale_turns()`` asks)."""
        self.check()
        return self.stale_turns()

    # -- a session ----------------------------------------------------------------------------------

    def watch(self, session: StaleSession) -> Disposable:
        """Seal the running turn's reads at each of ``session``'s turn ends, forget the turns an undo took
        back, and answer its ``stale_turns()``; dispose of the result to stop."""

        def on_transcript(update: AgentSessionUpdate) -> None:
            if update.kind == TURN_END_KIND:
                self.seal(session.current_turn)
            elif (undone := TurnUndoneLine.read(update)) is not None:
                for turn in undone.turns:
                    self.forget(turn)

        ended = session.on_transcript(on_transcript)
        source = session.add_stale_source(self.report)

        def stop() -> None:
            ended.dispose()
            source.dispose()

        return Disposable(stop)
