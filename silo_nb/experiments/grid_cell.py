"""One grid cell: a fresh session in its own working copy, its prompts, its changes, its scores.

- :func:`run_cell` is the whole life of a cell on the current event loop: a temporary working copy
  (seeded from the template folder when there is one), a private ``AgentsService`` whose journals go to a
  temporary data folder, connect, the cell's config options, the policy, the prompts one after the
  other, then the session closed (its process group killed). Then, while the working copy still exists:
  what the agent changed (``diffs.py``), the scorers (``scorers.py``, here: on a Dask worker too), and
  the copy kept if asked (``keep_to``). Both temporary folders are removed at the end. What comes back
  (:class:`CellResult`) is plain data — the journal's lines, the diff, the changed files, the scores,
  the usage — so the caller writes it under the run's folder, whether the cell ran here or on a worker.
- The timeout bounds the agent's part (start-up, settings and every turn). When it fires the running
  turn is cancelled on the agent's side (its ``turn_end`` says so) and the cell is ``failed``. A budget
  (``budgets.py``) is not a failure: the turn is cancelled, no further prompt is sent, and the record
  says which limit.
- A turn that fails (the agent's error) or a connect that fails makes the cell ``failed`` with that
  error on one line (its stderr lines, the crash's cause, joined with `` | ``, up to
  :data:`ERROR_CHARS`); a closed connection ends the cell's remaining prompts. A failed cell is still
  diffed and scored (a scorer says what it left behind).
- The cell's temporary folder (``silo-grid-<pid>-<cell>-…`` in the temp folder: the working copy under
  ``work/``, the journals under ``data/``) holds a ``lockf`` lock on ``.alive`` while the cell runs. A
  grid killed with ``kill -9`` cannot remove its folders: each cell sweeps the ones of this user whose
  process is gone (their lock is free) before it starts. A folder is made and locked under a name the
  sweep does not match, then renamed into view, so no sweep meets a starting cell's folder unlocked.
- ``kernel_tools`` (``run_grid(kernel_tools=True)``): the cell's session is offered the kernel tools on
  this process's ``__main__`` namespace (a kernel's: the user's), only where the cell runs on this loop;
  ``run_code`` then needs the policy's ``allow code``.
- :func:`run_cell_blocking` is the Dask task (and what a user's executor calls in a thread, a process
  or on another machine): such a thread has no event loop, so it starts one for the cell
  (``anyio.run``). That is the one place silo_nb makes a loop, and it never runs on the kernel's loop:
  the notebook side awaits the task's future (or the thread) instead.
- Copying, diffing and plain-function scorers are blocking work: they run in a worker thread
  (``anyio.to_thread``), so the kernel's loop keeps answering while a cell finishes.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import socket
import stat
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from silo_nb.acp import Sandbox
from silo_nb.experiments.budgets import BudgetWatch, CellBudget
from silo_nb.experiments.cell_sandbox import cell_sandbox, in_sandbox, sandbox_label
from silo_nb.experiments.diffs import ChangeBase, Changes
from silo_nb.experiments.grid_run import GridRun
from silo_nb.experiments.live_cells import STOPPED_BY_USER, LiveCell, open_live_cell
from silo_nb.experiments.policy import PermissionPolicy
from silo_nb.experiments.question_policy import QuestionPolicy
from silo_nb.experiments.retries import error_class
from silo_nb.experiments.scorers import score_run
from silo_nb.kernel_tools import KernelNamespace, KernelToolServer
from silo_nb.model import (
    AgentSessionError,
)
from silo_nb.sessions import (
    AgentsService,
    now_iso,
    read_lines,
    reported_agent,
)

__all__ = ["ERROR_CHARS", "CellResult", "CellSpec", "one_line_error", "run_cell", "run_cell_blocking"]

ERROR_CHARS = 2000
_PREFIX = "silo-grid-"
_STAGING = ".silo-grid-staging-"  # a cell folder being made (``_locked_folder``): the sweep skips it

# What IPython puts in a kernel's namespace (not the user's variables).
_IPYTHON_NAMES = frozenset({"In", "Out", "get_ipython", "exit", "quit", "open"})


@dataclass(frozen=True)
class CellSpec:
    """What one cell runs (picklable: it travels to Dask workers; scorers by cloudpickle there)."""

    cell: str
    profile: str
    config: dict[str, Any]
    prompts: tuple[str, ...]
    timeout: float
    policy: PermissionPolicy | None = None
    answers: QuestionPolicy | None = None  # the agent's questions; None: each declined
    template: str | None = None
    config_dirs: tuple[str, ...] | None = None
    variant: str = ""
    prompt_index: int = 0
    repeat: int = 0
    scorers: dict[str, Any] | None = None
    score_timeout: float = 120.0
    budget: CellBudget | None = None
    keep_to: str | None = None  # where the working copy is kept (keep_workdirs=True)
    kernel_tools: bool = False
    sandbox: str | Sandbox | None = None  # where the agent runs (cell_sandbox.py); None: unsandboxed
    # ``fork_grid``: the live session each cell forks (its handle: such cells run on this loop only) instead
    # of connecting a new one, and the system prompt the cell's session is given (None: the profile's).
    fork_of: Any = None
    system_prompt: str | None = None
    live_dir: str | None = None  # the run's live/ folder: the cell can be attached to (live_cells.py)
    attach_wait: float = 0.0  # how long a request no rule covers waits for a viewer when none is attached


@dataclass
class CellResult:
    """What a cell gives back: its journal lines, what it changed, its scores and how it went."""

    cell: str
    status: str = "failed"
    session_id: str | None = None
    error: str | None = None
    lines: list[str] = field(default_factory=list)
    started: str = ""
    ended: str = ""
    seconds: float = 0.0
    host: str = ""
    pid: int = 0
    usage: dict[str, Any] = field(default_factory=dict)  # tokens, cost, currency (the agent's own counts)
    budget: dict[str, Any] | None = None  # the limit that stopped the cell: limit, value, max, stopped
    diff: dict[str, Any] = field(default_factory=dict)  # Changes.summary()
    diff_text: str = ""
    contents: bytes | None = None  # the changed files (a zip), for rescore
    scores: dict[str, Any] | None = None  # ScoreSheet.record()
    attempts: int = 1
    workdir: str | None = None  # where the working copy was kept
    timings: dict[str, float] = field(default_factory=dict)  # seconds of the diff and of the scorers
    error_class: str | None = None  # retries.error_class: timeout, rate_limited, crashed, refused, other
    sandbox: str | None = None  # the sandbox the agent ran in (the row's ``sandbox`` column)
    agent_spec: str | None = None  # the pinned spec asked for (issue 33), else None
    agent_name: str | None = None  # initialize's agentInfo
    agent_version: str | None = None

    def record(self) -> dict[str, Any]:
        """The done record written under the run's folder (the lines, diff and contents go elsewhere)."""
        return {k: v for k, v in vars(self).items() if k not in ("lines", "diff_text", "contents", "scores")}


async def run_cell(spec: CellSpec) -> CellResult:
    """Run one cell on this loop (see the module docstring); never raises for the agent's failures."""
    result = CellResult(spec.cell, started=now_iso(), host=socket.gethostname(), pid=os.getpid())
    start = time.monotonic()
    sweep_stale_folders()
    folder, alive = _locked_folder(spec.cell)
    try:
        work, data = str(folder / "work"), str(folder / "data")
        if spec.template:
            await anyio.to_thread.run_sync(_copy, spec.template, work)
        else:
            os.mkdir(work, 0o700)
        base = await anyio.to_thread.run_sync(ChangeBase.capture, spec.template, work)
        try:
            sandbox = await cell_sandbox(spec.sandbox)
        except ValueError as exc:  # this worker cannot run it: the cell fails saying what to install
            sandbox, result.error = None, str(exc)
        result.sandbox = sandbox_label(sandbox)
        service = AgentsService(
            workspace_dir=work, data_dir=data, config_dirs=spec.config_dirs, sandbox=sandbox
        )
        journal = await _drive(service, spec, work, result) if result.error is None else None
        result.error = in_sandbox(result.error, sandbox)
        result.seconds = round(time.monotonic() - start, 3)
        mark = time.monotonic()
        changes: Changes = await anyio.to_thread.run_sync(base.changes, work)
        result.diff, result.diff_text, result.contents = changes.summary(), changes.diff, changes.contents
        result.timings["diff_s"] = round(time.monotonic() - mark, 4)
        if spec.scorers:
            mark = time.monotonic()
            await _score(spec, result, work, journal, folder / "score")
            result.timings["score_s"] = round(time.monotonic() - mark, 4)
        if spec.keep_to:
            result.workdir = await anyio.to_thread.run_sync(_keep, work, spec.keep_to)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        os.close(alive)
        result.ended = now_iso()
        result.seconds = result.seconds or round(time.monotonic() - start, 3)
    return result


def _locked_folder(cell: str) -> tuple[Path, int]:
    """A new cell folder ``silo-grid-<pid>-<cell>-…`` and its ``.alive`` file's descriptor, locked. The
    folder is made and locked under a name the sweep does not look at, then renamed into view: another
    process's sweep (a grid's cells start at once on several Dask workers) can never meet it unlocked —
    between an ``.alive`` created and locked in place it once removed a starting cell's folder."""
    staging = Path(tempfile.mkdtemp(prefix=f"{_STAGING}{os.getpid()}-"))
    alive = os.open(staging / ".alive", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.lockf(alive, fcntl.LOCK_EX)
        folder = staging.with_name(f"{_PREFIX}{os.getpid()}-{cell}-{staging.name.rpartition('-')[2]}")
        os.rename(staging, folder)  # the lock is the file's: it comes along
    except BaseException:
        os.close(alive)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return folder, alive


def sweep_stale_folders() -> None:
    """Remove the cell folders of this user whose process is gone (see the module notes), and the staging
    folders (:func:`_locked_folder`) of processes that died before renaming theirs."""
    temp = Path(tempfile.gettempdir())
    for staging in temp.glob(f"{_STAGING}*-*"):
        pid = staging.name[len(_STAGING) :].partition("-")[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                if staging.lstat().st_uid == os.geteuid():
                    shutil.rmtree(staging, ignore_errors=True)
    for folder in temp.glob(f"{_PREFIX}*-*"):
        pid = folder.name[len(_PREFIX) :].partition("-")[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue  # another layout, or this process's own (its lock would not tell)
        try:
            info = folder.lstat()
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
                continue
            fd = os.open(folder / ".alive", os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free: nobody runs that cell any more
        except OSError:
            continue
        finally:
            os.close(fd)
        shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's
    return True


def _copy(template: str, work: str) -> None:
    shutil.copytree(template, work, symlinks=True, dirs_exist_ok=True)


def _keep(work: str, target: str) -> str:
    shutil.rmtree(target, ignore_errors=True)  # an earlier attempt's copy
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    shutil.move(work, target)
    return target


async def _score(spec: CellSpec, result: CellResult, work: str, journal: Path | None, folder: Path) -> None:
    """The cell's scorers on its working copy, here (a Dask worker too); never fails the cell. ``folder``
    is inside the cell's locked folder, so a process killed while scoring leaves it to the next sweep."""
    assert spec.scorers is not None
    try:
        folder.mkdir(mode=0o700)
        if journal is None or not journal.is_file():  # no session: the scorers still get a (empty) journal
            journal = folder / "journal.jsonl"
            journal.write_text("".join(line + "\n" for line in result.lines), encoding="utf-8")
        cell = {
            "cell": spec.cell,
            "profile": spec.profile,
            "variant": spec.variant,
            "config": spec.config,
            "prompts": list(spec.prompts),
            "prompt_index": spec.prompt_index,
            "repeat": spec.repeat,
        }
        run = GridRun.of(cell, result.record(), workdir=Path(work), journal=journal, diff=result.diff_text)
        sheet = await score_run(spec.scorers, run, timeout=spec.score_timeout)
        result.scores = sheet.record()
    except Exception as exc:  # our own fault, not a scorer's: say so in the scores, keep the cell
        result.scores = {"values": {}, "errors": {"*": f"scoring failed: {type(exc).__name__}: {exc}"}}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def _kernel_tools(service: AgentsService, spec: CellSpec) -> KernelToolServer | None:
    """The kernel tools on ``__main__`` for a cell that asks for them (see the module docstring)."""
    if not spec.kernel_tools:
        return None
    summary = next((p for p in service.profiles.list() if p.id == spec.profile), None)
    timeout = summary.run_code_timeout if summary is not None else 60.0
    namespace = KernelNamespace(sys.modules["__main__"].__dict__, hidden=_IPYTHON_NAMES)
    return await KernelToolServer(namespace, run_code_timeout=timeout).start()


async def _drive(service: AgentsService, spec: CellSpec, work: str, result: CellResult) -> Path | None:
    handle = None
    tools = None
    live: LiveCell | None = None
    errors: list[str] = []
    journal: Path | None = None
    timed_out = gone = False
    seed = 0

    def cancel_turn() -> None:
        if handle is not None:
            handle.cancel()

    watch = BudgetWatch(spec.budget, cancel_turn)
    try:
        with anyio.move_on_after(spec.timeout) as scope:
            tools = await _kernel_tools(service, spec)
            if tools is not None and tools.socket_path and service.sandbox is not None:
                # The relay the agent starts reaches the kernel through this folder's socket (connect
                # needs no write): shown read-only, with the package the relay imports (``python -I
                # .../silo_nb/kernel_tools/relay.py``: an editable install's checkout is not shown whole).
                # The tools' code still runs in the kernel, by policy.
                relay = tools.server_config.args[-1]  # .../silo_nb/kernel_tools/relay.py
                package = os.path.dirname(os.path.dirname(os.path.abspath(relay)))
                service.sandbox = service.sandbox.showing(os.path.dirname(tools.socket_path), package)
            servers = [tools.server_config] if tools is not None else []
            profile = service.profiles.get(spec.profile)
            result.agent_spec = profile.agent if profile is not None else None
            if spec.fork_of is not None:
                seed = len(spec.fork_of.journal_lines())  # the parent's lines the fork's journal starts with
                handle = await spec.fork_of.fork(
                    cwd=work, mcp_servers=servers, system_prompt=spec.system_prompt
                )
            else:
                handle = await service.sessions.connect(
                    spec.profile, cwd=work, mcp_servers=servers, system_prompt=spec.system_prompt
                )
            result.agent_name, result.agent_version = reported_agent(handle.init_result)
            if tools is not None:
                tools.bind(handle)
            result.session_id = handle.session_id
            handle.on_update(watch.on_update)
            live = await open_live_cell(spec, handle)
            if live is None and spec.policy is not None:
                handle.on_permission(spec.policy)
            if live is None:
                handle.on_elicitation(spec.answers or QuestionPolicy())  # unattended: nobody else to ask
            for option_id, value in spec.config.items():
                await handle.set_config_option(option_id, value)
            async with anyio.create_task_group() as clock:
                if watch.budget.max_seconds is not None:
                    clock.start_soon(_clock, watch, watch.budget.max_seconds)
                for prompt in spec.prompts:
                    if watch.exceeded is not None or (live is not None and live.stopped):
                        break
                    try:
                        answer = await handle.prompt([{"type": "text", "text": prompt}])
                    except AgentSessionError as exc:
                        errors.append(one_line_error(exc))
                        if not handle.is_live:
                            break
                        continue
                    stopped = watch.exceeded is not None and answer.stop_reason == "cancelled"
                    watch.on_answer(answer.usage)
                    if watch.exceeded is not None:
                        watch.exceeded.setdefault("stopped", stopped)
                clock.cancel_scope.cancel()
        if scope.cancelled_caught:
            timed_out = True
            errors.append(f"timed out after {spec.timeout:g} s")
    except (AgentSessionError, ValueError, OSError) as exc:  # connect or a config option failed
        errors.append(one_line_error(exc))
    finally:
        if live is not None:
            errors += [STOPPED_BY_USER] if live.stopped else []
            live.close("failed" if errors else "finished", "; ".join(errors) or None)
        if tools is not None:
            tools.close()
        if handle is not None:
            gone = not handle.is_live  # the agent's process ended before we closed it
            with anyio.CancelScope(shield=True):
                await handle.aclose()  # the agent's process group is gone and the journal flushed
            result.session_id = handle.session_id
            where = handle.journal_path  # a fork's is in its parent's data folder
            if where is not None:
                journal = where[0]
                result.lines = read_lines(journal, root=where[1])
            if spec.fork_of is not None:  # a fork's cell is its own turns (scorers too): not the parent's
                result.lines, journal = result.lines[seed:], None
    result.usage = watch.usage()
    result.budget = watch.exceeded
    result.error = "; ".join(errors) or None
    result.status = "failed" if errors else "finished"
    result.error_class = error_class(result.error, timed_out=timed_out, agent_gone=gone)
    return journal


async def _clock(watch: BudgetWatch, seconds: float) -> None:
    """``max_seconds``: from the first prompt; trips the watch (which cancels the turn) when it runs out."""
    await anyio.sleep(seconds)
    watch.trip("max_seconds", seconds, seconds)


def one_line_error(exc: BaseException, *, prefix: str = "") -> str:
    """``exc``'s message on one line: its lines (the stderr lines stating a crash's cause too) joined with
    `` | ``, cut at :data:`ERROR_CHARS`."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("Agent stderr")]
    text = prefix + (" | ".join(lines) if lines else type(exc).__name__)
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…"


def run_cell_blocking(spec: CellSpec) -> CellResult:
    """Run the cell on a new event loop in this thread, which must not be running one (a pool's, Dask's)."""
    return anyio.run(run_cell, spec, backend="asyncio")


def template_folder(template: str | os.PathLike[str] | None) -> str | None:
    """The template folder as an absolute path, checked; None when there is none."""
    if template is None:
        return None
    path = Path(template).expanduser().resolve()
    if not path.is_dir():
        raise ValueError(
            f"template={os.fspath(template)!r} is not a folder — give the folder to copy per cell."
        )
    return str(path)
