"""Live cells: a running grid cell can be watched and answered from a notebook (``%silo attach``).

- Each running cell (:class:`LiveCell`, opened by ``grid_cell._drive`` once its session is connected)
  listens on a private Unix socket (``private_sockets.socket_folder``: a fresh 0700 folder, peers checked
  to be this user) and says where in ``<run folder>/live/<cell>.json``, removed when the cell ends. The
  same holds for a cell on a Dask worker of a ``LocalCluster``: the worker writes the link into the run's
  folder and listens on this machine. A cluster on other machines would need the run folder shared and a
  TCP channel with a secret instead of the socket (not built: its link file names a socket another
  machine cannot reach, and attach says the cell's process is gone).
- The channel speaks JSON lines. The cell sends its journal so far, then every journaled update as it
  happens (the transcript a viewer shows is the journal's, line for line), each request still waiting
  for an answer, and an ``end`` with the cell's status. The viewer sends answers and ``stop``.
- Who answers (the choice for issue 33): the grid's policy still answers every request one of its rules
  covers, at once, journaled with the rule. A request no rule covers (the policy's ``otherwise``, or no
  policy) and a question the question policy does not accept go to the attached viewers, when any are
  attached, and wait for one of them; with none attached they wait up to ``attach_wait`` seconds (0 by
  default: at once) for a viewer to come and answer. Then the policy's ``otherwise`` answers, its
  decision line saying nobody answered — so an unattended grid never waits longer than that, and the
  cell's own timeout bounds everything.
- Stop (a viewer's ``stop``) cancels the cell's turn and its remaining prompts; the cell's row then
  says ``cancelled by the user``. A viewer that goes away (closed, or too slow to read: its buffer past
  :data:`VIEWER_BUFFER`) leaves the cell running.
- :class:`AttachedCell` is the viewer's end (the notebook shows it with the live session's widgets);
  :func:`locate_cell` finds a run's cell: running (its socket) or finished (its journal and record).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from silo_nb.experiments.policy import PermissionPolicy, Rule
from silo_nb.experiments.question_policy import QuestionPolicy
from silo_nb.experiments.run_folder import RunFolder
from silo_nb.model import (
    PERMISSION_DECISION_KIND,
    QUESTION_DECISION_KIND,
    AgentElicitationRequest,
    AgentPermissionRequest,
    AgentSessionUpdate,
    QuestionField,
    check_answer,
    read_fields,
)
from silo_nb.private_sockets import same_user, socket_folder
from silo_nb.sessions import parse_lines, read_lines
from silo_nb.task_set import TaskSet

__all__ = [
    "LIVE_FOLDER",
    "STOPPED_BY_USER",
    "AttachedCell",
    "LiveCell",
    "LocatedCell",
    "locate_cell",
    "open_live_cell",
]

log = logging.getLogger("silo_nb.experiments")

LIVE_FOLDER = "live"  # under the run's folder: one <cell>.json per running cell
STOPPED_BY_USER = "cancelled by the user (Stop in an attached view)"
VIEWER_BUFFER = 8 * 1024 * 1024  # bytes a viewer may leave unread (past its journal so far) before it goes
_LIMIT = 64 * 1024 * 1024  # the longest line either end reads (a journal line can be long)


def _message(value: Mapping[str, Any]) -> bytes:
    return (json.dumps(value, separators=(",", ":")) + "\n").encode()


def _line_of(update: AgentSessionUpdate) -> str:
    return json.dumps(update.to_json(), ensure_ascii=False, separators=(",", ":"))


class LiveCell:
    """The cell's end of the channel (see the module docstring); answers by policy, else asks viewers."""

    def __init__(
        self,
        cell: str,
        handle: Any,
        policy: PermissionPolicy | None,
        answers: QuestionPolicy | None,
        attach_wait: float,
    ) -> None:
        self.cell = cell
        self.handle = handle
        self.policy = policy
        self.answers = answers or QuestionPolicy()
        self.attach_wait = max(0.0, float(attach_wait))
        self.stopped = False
        # Each viewer, and the bytes it may leave unread: its journal so far plus VIEWER_BUFFER.
        self.viewers: dict[asyncio.StreamWriter, int] = {}
        self._asks: dict[str, AgentPermissionRequest | AgentElicitationRequest] = {}
        self._changed = anyio.Event()
        self._tasks = TaskSet()
        self._server: asyncio.Server | None = None
        self._folder: str | None = None
        self._link: Path | None = None
        self._subscriptions: list[Any] = []

    @classmethod
    async def open(cls, spec: Any, handle: Any) -> LiveCell:
        """Listen, answer the session's requests, and publish the link (``spec``: the ``CellSpec``);
        ``OSError`` if it cannot."""
        live = cls(spec.cell, handle, spec.policy, spec.answers, spec.attach_wait)
        live_dir, cell = spec.live_dir, spec.cell
        try:
            live._folder = socket_folder("silo-cell-")
            path = os.path.join(live._folder, "s")
            live._server = await asyncio.start_unix_server(live._serve, path=path, limit=_LIMIT)
            os.chmod(path, 0o600)
            live._subscriptions = [
                handle.on_transcript(live._on_line),
                handle.on_permission(live._on_permission),
                handle.on_elicitation(live._on_question),
            ]
            folder = Path(live_dir)
            folder.mkdir(mode=0o700, exist_ok=True)
            link = {"cell": cell, "socket": path, "pid": os.getpid(), "host": socket.gethostname()}
            staging = folder / f".{cell}.{os.getpid()}.tmp"
            staging.write_text(json.dumps(link), encoding="utf-8")
            os.replace(staging, folder / f"{cell}.json")
            live._link = folder / f"{cell}.json"
        except BaseException:
            live.close("failed", None)
            raise
        return live

    # -- answering -------------------------------------------------------------------------------------

    def _covered(self, request: AgentPermissionRequest) -> tuple[bool, str | None, str]:
        """(a rule of the policy covers it, the option to choose (None: cancel), why)."""
        policy = self.policy
        if policy is None:
            return False, None, "no policy: cancelled"
        cwd = str(self.handle.cwd)
        for number, rule in enumerate(policy.rules, start=1):
            matches, option_id = rule.option_for(request, cwd)
            if matches:
                return True, option_id, f"{policy.name} rule {number}: {rule}"
        matches, option_id = Rule(policy.otherwise).option_for(request, cwd)
        return False, option_id if matches else None, f"{policy.name} otherwise: {policy.otherwise}"

    def _on_permission(self, request: AgentPermissionRequest) -> None:
        covered, option_id, why = self._covered(request)
        if covered or (not self.viewers and self.attach_wait <= 0):
            request.respond(option_id or "", by=why)  # "" is no option: answered cancelled
            return

        def fallback() -> None:
            request.respond(option_id or "", by=f"no attached viewer answered; {why}")

        self._ask(request, {"t": "permission", "request": request.model_dump(mode="json")}, fallback)

    def _on_question(self, request: AgentElicitationRequest) -> None:
        action, values, why = self.answers.answer(request)
        if action == "accept":
            try:
                request.accept(values, by=why)
            except ValueError as exc:
                request.decline(by=f"{why} (its values did not fit: {exc})")
            return
        answer = request.cancel if action == "cancel" else request.decline
        if not self.viewers and self.attach_wait <= 0:
            answer(by=why)
            return

        def fallback() -> None:
            answer(by=f"no attached viewer answered; {why}")

        self._ask(request, {"t": "question", "request": request.model_dump(mode="json")}, fallback)

    def _ask(self, request: Any, message: dict[str, Any], fallback: Callable[[], None]) -> None:
        self._asks[request.request_id] = request
        self._send_all(message)
        self._tasks.add(asyncio.ensure_future(self._wait(request, fallback)))

    async def _wait(self, request: Any, fallback: Callable[[], None]) -> None:
        """Until a viewer answers; with none attached, up to ``attach_wait`` s from the request."""
        start = time.monotonic()
        while not request.answered:
            if self.viewers:
                await self._changed.wait()
                continue
            remaining = self.attach_wait - (time.monotonic() - start)
            if remaining <= 0:
                break
            with anyio.move_on_after(remaining):
                await self._changed.wait()
        if not request.answered:
            fallback()
        self._asks.pop(request.request_id, None)

    def _poke(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    # -- the channel ------------------------------------------------------------------------------------

    def _on_line(self, update: AgentSessionUpdate) -> None:
        if self.viewers:
            self._send_all({"t": "line", "line": _line_of(update)})
        if update.kind in (PERMISSION_DECISION_KIND, QUESTION_DECISION_KIND):
            self._poke()

    def _send_all(self, message: Mapping[str, Any]) -> None:
        data = _message(message)
        for writer in list(self.viewers):
            if writer.is_closing() or writer.transport.get_write_buffer_size() > self.viewers[writer]:
                self._drop(writer)  # a viewer that does not read is let go, never waited for
            else:
                writer.write(data)

    def _drop(self, writer: asyncio.StreamWriter) -> None:
        if self.viewers.pop(writer, None) is not None:
            self._poke()
        writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not same_user(writer):
            writer.close()
            return
        # The journal so far and joining the viewers happen in one step of the loop: no line is missed
        # or sent twice between them.
        # A peer gone at once (another process's stale-folder sweep probes this socket by connecting) is
        # let go at its first failed write: asyncio warns of each write to a lost connection after five.
        for line in self.handle.journal_lines():
            if writer.is_closing():
                break
            writer.write(_message({"t": "line", "line": line}))
        for request in list(self._asks.values()):
            kind = "permission" if isinstance(request, AgentPermissionRequest) else "question"
            if not request.answered and not writer.is_closing():
                writer.write(_message({"t": kind, "request": request.model_dump(mode="json")}))
        if writer.is_closing():
            writer.close()
            return
        self.viewers[writer] = writer.transport.get_write_buffer_size() + VIEWER_BUFFER
        self._poke()
        try:
            while line := await reader.readline():
                self._command(line)
        except (OSError, ValueError, asyncio.LimitOverrunError, asyncio.IncompleteReadError):
            pass
        finally:
            self._drop(writer)

    def _command(self, line: bytes) -> None:
        """One viewer message; anything malformed is ignored (the viewer is this user's own)."""
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        kind = message.get("t")
        if kind == "stop":
            if not self.stopped:
                self.stopped = True
                self.handle.cancel()
            return
        request = self._asks.get(str(message.get("id")))
        if isinstance(request, AgentPermissionRequest) and kind == "permission":
            request.respond(str(message.get("option")))
        elif isinstance(request, AgentElicitationRequest) and kind == "question":
            action = message.get("action")
            content = message.get("content")
            try:
                if action == "accept":
                    request.accept(content if isinstance(content, dict) else {})
                elif action == "decline":
                    request.decline()
                else:
                    request.cancel()
            except ValueError as exc:  # values that do not fit the form: the question stays open
                self._send_all({"t": "note", "text": f"{request.request_id}: {exc}"})
        self._poke()

    def close(self, status: str, error: str | None) -> None:
        """Say how the cell ended to every viewer, stop listening and remove the link (never raises)."""
        self._send_all({"t": "end", "status": status, "error": error})
        for writer in list(self.viewers):
            writer.close()
        self.viewers.clear()
        self._tasks.cancel()
        for subscription in self._subscriptions:
            with contextlib.suppress(Exception):
                subscription.dispose()
        if self._link is not None:
            with contextlib.suppress(OSError):
                self._link.unlink()
        if self._server is not None:
            self._server.close()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)


async def open_live_cell(spec: Any, handle: Any) -> LiveCell | None:
    """The channel of the cell ``spec`` (a ``CellSpec``) describes, if it has a ``live_dir``; None where
    it cannot be had (the run's folder is not on this machine): the cell then runs unattended."""
    if spec.live_dir is None:
        return None
    try:
        return await LiveCell.open(spec, handle)
    except OSError as exc:
        log.info("cell %s cannot be attached to: %s", spec.cell, exc)
        return None


# -- the viewer's end ----------------------------------------------------------------------------------


@dataclass
class LocatedCell:
    """A run's cell as found: ``running`` (``socket``) or ``finished`` (its ``lines`` and ``record``)."""

    run: Path
    cell: str
    state: str
    socket: str | None = None
    host: str = ""  # the machine the running cell is on
    lines: list[str] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)


def _run_path(run: str | os.PathLike[str], folder: str | os.PathLike[str] | None) -> Path:
    given = Path(run).expanduser()
    if (given / "run.json").is_file():
        return given.resolve()
    base = Path(folder if folder is not None else "silo-runs").expanduser().resolve()
    path = base / str(run)
    if (path / "run.json").is_file() and os.sep not in str(run):
        return path
    runs = sorted(p.name for p in base.glob("*") if (p / "run.json").is_file()) if base.is_dir() else []
    raise LookupError(
        f"No run {os.fspath(run)!r} in {base} — runs there: {', '.join(runs) or 'none'} "
        "(give a run's name or its folder)."
    )


def _read_link(path: Path) -> dict[str, Any] | None:
    try:
        link = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return link if isinstance(link, dict) and isinstance(link.get("socket"), str) else None


def _alive(link: Mapping[str, Any]) -> bool:
    """The link's process runs (on this machine; another machine's cannot be told, so it counts)."""
    if link.get("host") != socket.gethostname():
        return True
    pid = link.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def locate_cell(
    run: str | os.PathLike[str], cell: str | None = None, *, folder: str | os.PathLike[str] | None = None
) -> LocatedCell:
    """Find ``cell`` of ``run`` (a name under ``folder``, ``silo-runs`` by default, or a run folder);
    without ``cell``, the first running one. ``LookupError`` (one line naming what exists) otherwise."""
    path = _run_path(run, folder)
    run_folder = RunFolder.open(path)
    cells = [str(c["cell"]) for c in run_folder.cells]
    live = path / LIVE_FOLDER
    links = {p.stem: _read_link(p) for p in live.glob("*.json")} if live.is_dir() else {}
    running = sorted(name for name, link in links.items() if link is not None and _alive(link))
    if cell is None:
        if not running:
            raise LookupError(
                f"No cell of {path.name!r} is running — name one to see its turn: {', '.join(cells)}."
            )
        cell = running[0]
    if cell not in cells:
        raise LookupError(f"{path.name!r} has no cell {cell!r} — its cells: {', '.join(cells)}.")
    link = links.get(cell)
    if link is not None and _alive(link):
        return LocatedCell(path, cell, "running", socket=link["socket"], host=str(link.get("host") or ""))
    record = run_folder.record(cell)
    if record is not None:
        lines = read_lines(run_folder.journal_path(cell), root=path)
        return LocatedCell(path, cell, "finished", lines=lines, record=record)
    if link is not None:
        raise LookupError(
            f"Cell {cell!r} of {path.name!r} has a link but its process (pid {link.get('pid')}) is gone "
            "(killed?) — run_grid again resumes it."
        )
    raise LookupError(
        f"Cell {cell!r} of {path.name!r} is not running and has no record yet (not started, or finishing)"
        " — attach again in a moment."
    )


class _Questions:
    """A question's answers as the viewer keeps them (``QuestionAnswers``): checked here against the form
    (the cell's session checks them again), then sent to the cell."""

    def __init__(self, link: AttachedCell) -> None:
        self.link = link
        self.outcomes: dict[str, tuple[bool, str | None, dict[str, Any] | None]] = {}
        self.forms: dict[str, tuple[QuestionField, ...] | None] = {}  # None: not a form

    def answer(
        self, request_id: str, action: str, content: dict[str, Any] | None, *, by: str = "user"
    ) -> None:
        if self.outcome(request_id)[0]:
            return
        self.outcomes[request_id] = (True, action, content)
        self.link.send({"t": "question", "id": request_id, "action": action, "content": content})

    def outcome(self, request_id: str) -> tuple[bool, str | None, dict[str, Any] | None]:
        return self.outcomes.get(request_id, (False, None, None))

    def check(self, request_id: str, values: Mapping[str, Any]) -> dict[str, Any]:
        fields = self.forms.get(request_id)
        if fields is None:
            if values:
                raise ValueError("this question takes no values (it is not a form)")
            return {}
        return check_answer(fields, values)


class AttachedCell:
    """The viewer's end of a running cell's channel: ``on_update`` / ``on_permission`` / ``on_question``
    / ``on_end`` are called as the cell reports; answer through the requests (they point here)."""

    def __init__(self, located: LocatedCell, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.located = located
        self.cell = located.cell
        self._reader, self._writer = reader, writer
        self.status = "running"
        self.error: str | None = None
        self.on_update: Callable[[AgentSessionUpdate], None] = lambda _update: None
        self.on_permission: Callable[[AgentPermissionRequest], None] = lambda _request: None
        self.on_question: Callable[[AgentElicitationRequest], None] = lambda _request: None
        self.on_end: Callable[[str, str | None], None] = lambda _status, _error: None
        self.questions = _Questions(self)
        self._permissions: dict[str, tuple[bool, str | None]] = {}

    @classmethod
    async def connect(cls, located: LocatedCell) -> AttachedCell:
        """``OSError`` when the cell's process is gone (its socket refuses)."""
        assert located.socket is not None
        reader, writer = await asyncio.open_unix_connection(located.socket, limit=_LIMIT)
        return cls(located, reader, writer)

    # PermissionAnswers: what a request's ``respond`` calls (a row's buttons)
    def settle(self, request_id: str, option_id: str | None, *, by: str | None = None) -> None:
        if self.outcome(request_id)[0]:
            return
        self._permissions[request_id] = (True, option_id)
        self.send({"t": "permission", "id": request_id, "option": option_id})

    def outcome(self, request_id: str) -> tuple[bool, str | None]:
        return self._permissions.get(request_id, (False, None))

    def send(self, message: Mapping[str, Any]) -> None:
        if not self._writer.is_closing():
            self._writer.write(_message(message))

    def stop(self) -> None:
        """Cancel the cell's turn (and its remaining prompts)."""
        self.send({"t": "stop"})

    def close(self) -> None:
        """Detach: the cell goes on."""
        self._writer.close()

    async def pump(self) -> None:
        """Read the cell's messages until it ends or the channel closes."""
        try:
            while line := await self._reader.readline():
                self._dispatch(json.loads(line))
        except (OSError, ValueError, asyncio.LimitOverrunError, asyncio.IncompleteReadError):
            pass
        finally:
            self._writer.close()
            if self.status == "running":  # closed without an end: detached, or the cell's process died
                self.status = "detached"
                self.on_end("detached", None)

    def _dispatch(self, message: Any) -> None:
        kind = message.get("t") if isinstance(message, dict) else None
        if kind == "line":
            for update in parse_lines([str(message.get("line"))]):
                self._note_decision(update)
                self.on_update(update)
        elif kind == "permission":
            request = AgentPermissionRequest.model_validate(message["request"]).attach_answers(self)
            self.on_permission(request)
        elif kind == "question":
            asked = AgentElicitationRequest.model_validate(message["request"])
            form = read_fields(asked.requested_schema)[0] if asked.mode == "form" else None
            self.questions.forms[asked.request_id] = form
            self.on_question(asked.attach_answers(self.questions))
        elif kind == "end":
            self.status = str(message.get("status") or "finished")
            error = message.get("error")
            self.error = error if isinstance(error, str) else None
            self.on_end(self.status, self.error)

    def _note_decision(self, update: AgentSessionUpdate) -> None:
        """A request answered elsewhere (the policy, another viewer, a Stop) shows answered here too."""
        request_id = update.raw.get("requestId")
        if not isinstance(request_id, str):
            return
        if update.kind == PERMISSION_DECISION_KIND and not self.outcome(request_id)[0]:
            option = update.raw.get("optionId")
            self._permissions[request_id] = (True, option if isinstance(option, str) else None)
        elif update.kind == QUESTION_DECISION_KIND and not self.questions.outcome(request_id)[0]:
            content = update.raw.get("content")
            action = update.raw.get("action")
            self.questions.outcomes[request_id] = (
                True,
                action if isinstance(action, str) else "cancel",
                content if isinstance(content, dict) else None,
            )
