"""``run_grid``: prompts × profiles × configs × repeats, each cell a fresh session, into a DataFrame.

- The grid is expanded into cells with stable ids (``p<prompt>-<profile>-c<config>-r<repeat>``) and
  described in the run's folder (``run_folder.py``); a run has a name (by default derived from the grid
  itself, so the same call after a kernel restart finds its run) and a folder (``<folder>/<name>``).
- Cells that already have a done record are skipped; the others run, at most ``concurrency`` at a time,
  on this loop or on Dask workers (``executors.py``). Each cell's journal, diff, scores and record are
  written as it ends, so a crash loses only the cells that were running. ``retry_failed=True`` also redoes
  failed cells. A run that samples (``sessions.sampling``) resumes only a run this process opened: an
  earlier one of the name is set aside whole (``run_folder.set_aside``) and every cell runs again.
- ``scorers=`` score each cell where it ran (``scorers.py``); ``max_tokens`` / ``max_cost`` /
  ``max_seconds`` bound each cell and ``budget=`` the grid's total (``budgets.py``): past it no new cell
  starts, and those cells are listed in the folder (``not_run.json``) and the DataFrame.
- ``retry=`` runs a failed cell again by its error class, each attempt a row (``retries.py``);
  ``cache=True`` reuses a cell any run finished with the same inputs, starting no agent (``grid_cache.py``).
- The DataFrame is rebuilt from the run's folder alone (``silo_nb.frame(folder)`` gives the same one);
  its ``attrs["run_folder"]`` says where that is.
- Cancelling the call (the stop button) cancels every running cell; each closes its session (the agent's
  process group is killed) before the cancellation goes on. Nothing is approved without ``policy=``, and
  the agent's questions are declined unless ``answers=`` covers them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from silo_nb.acp import Sandbox
from silo_nb.experiments._pandas import require_pandas
from silo_nb.experiments.agents_axis import axis_slug, pin_agents
from silo_nb.experiments.budgets import CellBudget, GridSpend, check_grid_budget
from silo_nb.experiments.cell_sandbox import grid_sandbox
from silo_nb.experiments.executors import CellExecutor, executor_for
from silo_nb.experiments.grid_cell import CellResult, CellSpec, one_line_error, template_folder
from silo_nb.experiments.grid_retry import CacheKeys, CellRetries, remember_cached, reuse_cached
from silo_nb.experiments.live_cells import LIVE_FOLDER
from silo_nb.experiments.policy import PermissionPolicy
from silo_nb.experiments.progress import GridCounts, GridProgress, TextProgress
from silo_nb.experiments.question_policy import QuestionPolicy
from silo_nb.experiments.retries import check_backoff, check_retry, next_retries, retry_wanted, spent_by
from silo_nb.experiments.run_folder import RunFolder
from silo_nb.experiments.run_rows import run_rows
from silo_nb.experiments.scorers import check_scorers
from silo_nb.experiments.table import rows_to_frame
from silo_nb.sessions import is_agent_spec, sampling_asked

__all__ = ["DEFAULT_RUNS_FOLDER", "expand_grid", "run_grid"]

log = logging.getLogger("silo_nb.experiments")

DEFAULT_RUNS_FOLDER = "silo-runs"
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


async def run_grid(
    prompts: Sequence[str | Sequence[str]],
    *,
    profiles: Sequence[str] = ("demo",),
    configs: Sequence[Mapping[str, Any]] = ({},),
    repeats: int = 1,
    concurrency: int = 4,
    policy: PermissionPolicy | None = None,
    answers: Mapping[str, Any] | QuestionPolicy | None = None,
    timeout: float = 300.0,
    name: str | None = None,
    folder: str | os.PathLike[str] | None = None,
    template: str | os.PathLike[str] | None = None,
    executor: Any = None,
    progress: GridProgress | bool | None = True,
    retry_failed: bool = False,
    config_dirs: Iterable[str | os.PathLike[str]] | None = None,
    scorers: Mapping[str, Any] | None = None,
    score_timeout: float = 120.0,
    max_tokens: float | None = None,
    max_cost: float | None = None,
    max_seconds: float | None = None,
    budget: Mapping[str, float] | None = None,
    keep_workdirs: bool = False,
    kernel_tools: bool = False,
    retry: Mapping[str, int] | None = None,
    retry_backoff: float = 2.0,
    cache: bool = False,
    sandbox: str | Sandbox | None = None,
    agents: Sequence[str] | None = None,
    system_prompts: Sequence[str | None] = (None,),
    fork_of: Any = None,
    attach_wait: float = 0.0,
) -> Any:
    """Run every cell of the grid (skipping those a previous attempt finished); return the DataFrame.

    A run that samples (``silo_sample = True`` in the notebook, e.g. ``papermill -p silo_sample True``,
    or ``SILO_NB_SAMPLE=1``) skips only what a ``run_grid`` of this process finished: a run of the name
    from an earlier process is kept as ``<name>.<n>`` and every cell runs again.

    ``prompts``: each item a prompt, or a list of prompts sent one after the other in the same session.
    ``configs``: config option values set on each new session (e.g. ``{"model": "demo-smart"}``).
    ``answers``: the agent's questions answered by field name (``{"confirm": True}``, or a
    :class:`~silo_nb.experiments.QuestionPolicy`); a question they do not cover is declined.
    ``executor``: where cells run — ``None`` (this loop), a ``dask.distributed.Client`` (its workers),
    or any :class:`~silo_nb.experiments.CellExecutor` (an ``async def run(spec)`` and a ``label``; the
    label is in the progress line and the ``executor`` column).
    ``scorers``: name → a function of the :class:`~silo_nb.experiments.GridRun` (or
    :func:`~silo_nb.experiments.command_scorer`); columns ``score.NAME`` and ``score_error``. Each
    plain scorer may take ``score_timeout`` seconds.
    ``max_tokens`` / ``max_cost`` / ``max_seconds``: per cell; the turn that passes one is cancelled
    (stop reason ``budget``, ``budget_exceeded`` names it). ``budget``: the grid's total, ``{"cost": 5}``
    or ``{"tokens": 1e6}``: no new cell starts once it is spent.
    ``keep_workdirs``: keep each cell's working copy under the run's folder (``workdirs/<cell>``).
    ``kernel_tools``: offer each session the kernel tools on this kernel's namespace (off by default; code
    runs only where ``policy`` says ``allow code``); cells must then run on this loop (no ``executor``).
    ``retry``: error class → extra attempts, e.g. ``{"crashed": 2, "timeout": 1, "rate_limited": 3}``
    (``retries.py``); each attempt is a row (``attempt``, ``final``), only final ones are summarized.
    ``retry_backoff``: seconds before a rate-limited retry, doubled per retry of the cell (at most 60).
    ``cache``: reuse a cell any run finished with the same inputs (``grid_cache.py``) instead of running
    it; its rows say where from (``cached_from``).
    ``sandbox``: ``"bwrap"``, ``"podman"``, ``"docker"`` or a :class:`~silo_nb.acp.Sandbox`: each cell's
    agent and its terminals see only their working copy read-write and their runtime read-only (no other
    cell's folder, no home); the ``sandbox`` column says which ran. One this machine lacks is refused.
    ``agents``: the agent axis, in place of ``profiles`` — each a profile id or a pinned spec
    (``npm:PKG@VER``, ``pypi:NAME==VER``, ``acp:ID@VER``), installed once before the first cell
    (``sessions/agent_pins.py``); rows say ``agent_spec``, ``agent_name`` and ``agent_version``.
    ``system_prompts``: an axis of system prompts each cell's session is given (None: the profile's).
    ``fork_of``: a live session each cell forks instead of connecting a new one (``fork_grid``'s, which
    checks it): its profile is the grid's, and the cells run on this loop.
    ``attach_wait``: a running cell can be watched and answered with ``%silo attach`` (``live_cells.py``);
    a permission no rule of ``policy`` covers (or a question ``answers`` does not) waits for an attached
    viewer, and with none attached up to this many seconds for one (0: the policy answers at once).
    """
    pd = require_pandas()
    if fork_of is not None:
        profiles = (fork_of.profile_id,)
    profiles = await pin_agents(agents, profiles, local=executor is None)
    cells = expand_grid(
        prompts, profiles=profiles, configs=configs, repeats=repeats, system_prompts=system_prompts
    )
    _check_numbers(concurrency=concurrency, timeout=timeout)
    if not isinstance(attach_wait, int | float) or not 0 <= attach_wait < float("inf"):
        raise ValueError(f"attach_wait={attach_wait!r} — give the seconds (0 or more) to wait for a viewer.")
    if not isinstance(score_timeout, int | float) or score_timeout <= 0:
        raise ValueError(f"score_timeout={score_timeout!r} — give the seconds one scorer may take.")
    if policy is not None and not isinstance(policy, PermissionPolicy):
        raise TypeError(f"policy= takes a silo_nb PermissionPolicy — not {type(policy).__name__}.")
    question_policy = answers if isinstance(answers, QuestionPolicy) else QuestionPolicy(answers or {})
    chosen_scorers = check_scorers(scorers)
    cell_budget = CellBudget(max_tokens=max_tokens, max_cost=max_cost, max_seconds=max_seconds)
    spend = GridSpend(check_grid_budget(budget))
    retries = check_retry(retry)
    backoff = check_backoff(retry_backoff)
    if not isinstance(cache, bool):
        raise TypeError(f"cache={cache!r} — give True to reuse finished cells, or False.")
    if fork_of is not None and executor is not None:
        raise ValueError(
            "fork_grid runs its cells on this kernel's loop (the forked session is here) — drop executor=."
        )
    if kernel_tools and executor is not None:
        raise ValueError(
            "kernel_tools=True works only with the cells on this kernel's loop — drop executor= (the tools "
            "act on this kernel's namespace, which a worker does not have)."
        )
    runner = executor_for(executor)  # before the run's folder exists: a bad executor= leaves nothing
    sandbox = await grid_sandbox(sandbox)  # one line naming what to install, before any cell runs
    run_name = name or "grid-" + hashlib.sha256(json.dumps(cells).encode()).hexdigest()[:10]
    if not _SAFE_NAME.fullmatch(run_name):
        raise ValueError(f"name={run_name!r} — use letters, digits, '.', '_' and '-' (it names a folder).")
    root = Path(folder if folder is not None else DEFAULT_RUNS_FOLDER).expanduser().resolve()
    run = RunFolder.create(root / run_name, run_name, cells, fresh=sampling_asked())
    seed = template_folder(template)
    dirs = tuple(os.fspath(d) for d in config_dirs) if config_dirs is not None else None
    if executor is None and fork_of is None:
        _check_profiles(profiles, dirs)
    with run.running():  # a second run_grid of this run, here or in another process, is refused
        todo = []
        for cell in cells:
            record = run.record(cell["cell"])
            for usage in spent_by(run, cell["cell"], record):  # every attempt's, a cell redone too
                spend.add(usage)
            failed = record is not None and record["status"] == "failed"
            if record is None or (retry_failed and failed) or retry_wanted(record, retries):
                todo.append(cell)
        sink: GridProgress | None = TextProgress() if progress is True else (progress or None)
        tracker = _Tracker(run_name, len(cells), len(cells) - len(todo), sink, runner.label)
        tracker.folder = str(run.path)
        tracker.failed = sum(
            1 for c in cells if c not in todo and (r := run.record(c["cell"])) and r["status"] == "failed"
        )
        log.info("run %s: %d cells, %d to run on %s", run_name, len(cells), len(todo), runner.label)
        tracker.start()
        attempt = _Attempt(run, anyio.CapacityLimiter(concurrency), tracker, spend)
        attempt.retries = CellRetries(retries, backoff)
        cached = await CacheKeys.start(seed, dirs) if cache else None
        try:
            async with anyio.create_task_group() as group:
                for cell in todo:
                    spec = CellSpec(
                        cell=cell["cell"],
                        profile=cell["profile"],
                        config=dict(cell["config"]),
                        prompts=tuple(cell["prompts"]),
                        timeout=timeout,
                        policy=policy,
                        answers=question_policy,
                        template=seed,
                        config_dirs=dirs,
                        variant=cell["variant"],
                        prompt_index=cell["prompt_index"],
                        repeat=cell["repeat"],
                        scorers=chosen_scorers or None,
                        score_timeout=float(score_timeout),
                        budget=cell_budget if cell_budget.active else None,
                        keep_to=str(run.workdir_path(cell["cell"])) if keep_workdirs else None,
                        kernel_tools=kernel_tools,
                        sandbox=sandbox,
                        fork_of=fork_of,
                        system_prompt=cell.get("system_prompt"),
                        live_dir=str(run.path / LIVE_FOLDER),
                        attach_wait=float(attach_wait),
                    )
                    attempt.keys[spec.cell] = cached.key(spec, cell) if cached is not None else None
                    group.start_soon(_one_cell, runner, spec, attempt)
        finally:
            tracker.finish()
            order = [c["cell"] for c in cells]
            run.save_not_run(spend.reached(), sorted(attempt.not_run, key=order.index))
        table = rows_to_frame(run_rows(run), pd)
        table.attrs["run_folder"] = str(run.path)
        return table


@dataclass
class _Attempt:
    """This call's share of the run: its folder, the concurrency limit, the counts and the spend."""

    run: RunFolder
    limiter: anyio.CapacityLimiter
    tracker: _Tracker
    spend: GridSpend
    not_run: list[str] = field(default_factory=list)  # cells the grid's budget kept from starting
    retries: CellRetries = field(default_factory=CellRetries)
    keys: dict[str, str | None] = field(default_factory=dict)  # cell → cache key (cache=True)


async def _one_cell(runner: CellExecutor, spec: CellSpec, attempt: _Attempt) -> None:
    """The cell from the cache, else run until it succeeds or its error class has no retry left."""
    key, tracker = attempt.keys.get(spec.cell), attempt.tracker
    number, counts = attempt.retries.resume(attempt.run, spec.cell)
    if key is not None and number == 1 and await reuse_cached(attempt.run, spec, key):
        tracker.done += 1
        tracker.changed()
        return
    final = attempt.run.record(spec.cell) if number > 1 else None  # a resumed cell's failed attempt
    while True:
        record = await _run_attempt(runner, spec, attempt, {"attempt": number, "retries": counts})
        final = record or final  # a retry the budget kept back: the last attempt stays the cell's
        if record is None or not await attempt.retries.again(record, attempt.spend):
            break
        number, counts = number + 1, next_retries(record)
    if key is not None and final is not None and final["status"] == "finished":
        await remember_cached(attempt.run, spec.cell, key)
    tracker.done += 1
    tracker.failed += final is not None and final["status"] == "failed"
    tracker.changed()


async def _run_attempt(
    runner: CellExecutor, spec: CellSpec, attempt: _Attempt, fields: dict[str, Any]
) -> dict[str, Any] | None:
    """One attempt of the cell, saved as its done record (returned); None when the budget kept it back."""
    run, tracker, spend = attempt.run, attempt.tracker, attempt.spend
    async with attempt.limiter:
        if spend.reached() is not None:  # the grid's budget is spent: this cell does not start
            if fields["attempt"] == 1 or run.record(spec.cell) is None:  # else: its last attempt stays
                attempt.not_run.append(spec.cell)
                tracker.not_run += 1
            return None
        attempt.retries.starting(run, spec.cell, fields["attempt"])
        tracker.running += 1
        tracker.cells.append(spec.cell)
        tracker.changed()
        try:
            try:
                result = await runner.run(spec)
                if not isinstance(result, CellResult):  # a user's executor's bug fails its cell, not the run
                    raise TypeError(f"{runner.label}: run() gave {type(result).__name__}, not a CellResult")
            except Exception as exc:  # the executor itself failed (a lost Dask worker): the cell failed
                log.warning("cell %s could not run: %s", spec.cell, exc)
                result = CellResult(spec.cell, error=one_line_error(exc, prefix=f"{type(exc).__name__}: "))
            record = result.record()
            record.update(
                profile=spec.profile,
                config=spec.config,
                prompts=list(spec.prompts),
                executor=runner.label,
                template=spec.template,
                cache_key=attempt.keys.get(spec.cell),
                **fields,
            )
            run.save(
                spec.cell,
                result.lines,
                record,
                diff=result.diff_text,
                contents=result.contents,
                scores=result.scores,
            )
            spend.add(result.usage)
        finally:
            tracker.running -= 1
            tracker.cells.remove(spec.cell)
    return record


class _Tracker:
    """Counts for the progress display."""

    def __init__(self, name: str, total: int, skipped: int, sink: GridProgress | None, executor: str) -> None:
        self.name, self.total, self.skipped, self.sink, self.executor = name, total, skipped, sink, executor
        self.done, self.running, self.failed, self.not_run = skipped, 0, 0, 0
        self.start_time = time.monotonic()
        self.cells: list[str] = []  # running now
        self.folder = ""

    def counts(self) -> GridCounts:
        return GridCounts(
            self.name,
            self.total,
            done=self.done,
            running=self.running,
            failed=self.failed,
            skipped=self.skipped,
            elapsed=time.monotonic() - self.start_time,
            executor=self.executor,
            not_run=self.not_run,
            running_cells=tuple(self.cells),
            folder=self.folder,
        )

    def _tell(self, what: str) -> None:
        if self.sink is not None:
            try:
                getattr(self.sink, what)(self.counts())
            except Exception:  # a broken display must not stop the run
                log.exception("the progress display failed")

    def start(self) -> None:
        self._tell("started")

    def changed(self) -> None:
        self._tell("changed")

    def finish(self) -> None:
        self._tell("finished")


def expand_grid(
    prompts: Sequence[str | Sequence[str]],
    *,
    profiles: Sequence[str],
    configs: Sequence[Mapping[str, Any]],
    repeats: int,
    system_prompts: Sequence[str | None] = (None,),
) -> list[dict[str, Any]]:
    """The grid's cells in order (prompt, profile, config, system prompt, repeat), as JSON-ready dicts. With
    one system prompt (the default) the cells are as before the axis was added: same ids, same run name."""
    if isinstance(prompts, str) or not prompts:
        raise ValueError(
            "prompts= takes a non-empty list of prompts, e.g. ['Summarise notes.md', 'Plan it']."
        )
    turns: list[list[str]] = []
    for item in prompts:
        texts = [item] if isinstance(item, str) else list(item)
        if not texts or not all(isinstance(t, str) and t.strip() for t in texts):
            raise ValueError(f"Each prompt is a non-empty string or a list of them — got {item!r}.")
        turns.append(texts)
    if isinstance(profiles, str) or not profiles or not all(isinstance(p, str) and p for p in profiles):
        raise ValueError("profiles= takes a non-empty list of profile ids, e.g. ['demo'].")
    if isinstance(configs, Mapping) or not configs:
        raise ValueError("configs= takes a non-empty list of dicts, e.g. [{}, {'model': 'demo-smart'}].")
    for config in configs:
        if not isinstance(config, Mapping) or not all(isinstance(k, str) for k in config):
            raise ValueError(f"Each config is a dict of option id → value — got {config!r}.")
        json.dumps(dict(config))  # values must be plain data (they are written to run.json)
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats={repeats!r} — give a whole number, 1 or more.")
    if isinstance(system_prompts, str) or not system_prompts:
        raise ValueError(
            "system_prompts= takes a non-empty list of texts (None: the profile's), e.g. [None, 'Be brief.']."
        )
    if not all(s is None or isinstance(s, str) for s in system_prompts):
        raise ValueError(f"Each system prompt is a text or None — got {list(system_prompts)!r}.")
    axis = len(system_prompts) > 1 or system_prompts[0] is not None
    cells: list[dict[str, Any]] = []
    for p, texts in enumerate(turns):
        for profile in profiles:
            for c, config in enumerate(configs):
                for k, system_prompt in enumerate(system_prompts):
                    for r in range(repeats):
                        variant = _variant(profile, config, len(profiles) > 1)
                        tail_slug = (f"-s{k}" if axis else "") + f"-r{r}"
                        cell = {
                            "cell": f"p{p}-{axis_slug(profile, _slug)}-c{c}" + tail_slug,
                            "profile": profile,
                            "variant": variant + (f", system prompt {k}" if len(system_prompts) > 1 else ""),
                            "config": dict(config),
                            "prompts": texts,
                            "prompt_index": p,
                            "repeat": r,
                        }
                        if axis:
                            cell["system_prompt"] = system_prompt
                        cells.append(cell)
    return cells


def _variant(profile: str, config: Mapping[str, Any], with_profile: bool) -> str:
    label = ", ".join(f"{k}={v}" for k, v in config.items()) or "defaults"
    return f"{profile}: {label}" if with_profile else label


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:40] or "profile"


def _check_numbers(*, concurrency: int, timeout: float) -> None:
    if not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency={concurrency!r} — give how many cells may run at once (1 or more).")
    if not isinstance(timeout, int | float) or timeout <= 0:
        raise ValueError(f"timeout={timeout!r} — give the seconds one cell may take (more than 0).")


def _check_profiles(profiles: Sequence[str], config_dirs: tuple[str, ...] | None) -> None:
    from silo_nb.sessions import AgentProfilesService

    known = [summary.id for summary in AgentProfilesService(config_dirs).list()]
    for profile in profiles:
        if profile not in known and not is_agent_spec(profile):
            raise ValueError(f"Unknown profile {profile!r} — known profiles: {', '.join(known)}.")
