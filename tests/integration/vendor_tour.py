"""One tour of every vendor agent through the public API, the agents run concurrently (CI time).

For each agent with its dummy settings (``vendor_agents.VENDORS``): ``doctor``; ``connect``; what a
listener added after ``connect`` gets before the first prompt; its config options and one set;
its commands once announced; a prompt Stopped after 3 s (a second Stop when the first went
unanswered); the journal's last line; ``dispose``; its process group and its HOME left empty. Without
keys (a HOME that never had one): the sign-in error, at ``connect`` or at the first prompt. What each
step showed is kept as plain data (:class:`Tour`), or the step's error; the tests assert on it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

import silo_nb
from silo_nb.acp.client import background_closes
from silo_nb.sessions.doctor import AgentCheck
from tests.integration.vendor_agents import (
    VENDORS,
    Vendor,
    agent_environment,
    processes_in_group,
    processes_with_home,
    profile,
)

STOP_AFTER = 3.0  # seconds into the turn before the Stop (a Stop before the turn has begun may be lost)
COMMANDS_WAIT = 30.0
CONCURRENT = 4  # agents starting at once (2 cores: more only slows each one's start past its bounds)


@dataclass
class Tour:
    """What one agent showed (see the module docstring)."""

    vendor: str
    doctor: AgentCheck | None = None
    options: dict[str, Any] = field(default_factory=dict)  # id → current value
    option_after: Any = None  # the value of ``vendor.option`` after setting it
    commands: list[str] = field(default_factory=list)
    opening: list[tuple[str, str]] = field(default_factory=list)  # (kind, text) handed over at on_update
    stop_reason: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    overdue: bool = False
    live_after_second_stop: bool | None = None  # only when the first Stop went unanswered
    turn_end: dict[str, Any] = field(default_factory=dict)
    group_left: list[int] = field(default_factory=list)
    home_left: list[int] = field(default_factory=list)
    sign_in: str | None = None  # the AgentSignInError without keys
    sign_in_at: str | None = None  # "connect" | "prompt"
    sign_in_methods: tuple[str, ...] = ()
    error: str | None = None
    auth_status: str | None = None  # what the session last heard of its sign-in (``_auth/status_update``)


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _error(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc)[-3:]).strip()


async def _stop(handle: silo_nb.AgentSessionHandle, tour: Tour) -> None:
    """A prompt Stopped after STOP_AFTER s. An agent whose offline model call gave up before the Stop (its
    retries' random backoff: qwen, once in a full run, under 3 s) is prompted once more: what is tested is
    how it answers a Stop, and that turn had none to answer."""
    for attempt in range(2):
        results: list[silo_nb.AgentPromptResult | silo_nb.AgentSessionError] = []

        async def turn(into: list[silo_nb.AgentPromptResult | silo_nb.AgentSessionError]) -> None:
            try:
                into.append(await handle.prompt([{"type": "text", "text": "hello"}]))
            except silo_nb.AgentSessionError as exc:
                into.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(turn, results)
            await anyio.sleep(STOP_AFTER)
            failed_first = bool(results) and isinstance(results[0], silo_nb.AgentSessionError)
            handle.cancel()
        if not (failed_first and attempt == 0):
            break
    (result,) = results
    if isinstance(result, silo_nb.AgentSessionError):
        raise result
    tour.stop_reason, tour.raw, tour.overdue = result.stop_reason, dict(result.raw), handle.stop_overdue
    if tour.overdue:  # the agent did not stop: the second Stop ends it
        handle.cancel()
        with anyio.move_on_after(10):
            while handle.is_live:
                await anyio.sleep(0.05)
        tour.live_after_second_stop = handle.is_live


async def _work(svc: silo_nb.AgentsService, vendor: Vendor, home: Path, tour: Tour) -> None:
    tour.doctor = await svc.sessions.doctor(vendor.id)
    handle = await svc.sessions.connect(vendor.id)
    process = handle.core.wiring.connection.process  # type: ignore[union-attr]
    group = process.pid if process is not None else None
    try:
        seen: list[silo_nb.AgentSessionUpdate] = []
        handle.on_update(seen.append)  # handed what came before, then live
        tour.options = {o.id: o.current_value for o in handle.config_options}
        if vendor.option is not None:
            option_id, value = vendor.option
            await handle.set_config_option(option_id, value)
            tour.option_after = next(o.current_value for o in handle.config_options if o.id == option_id)
        with anyio.move_on_after(COMMANDS_WAIT):
            while not handle.commands:
                await anyio.sleep(0.05)
        tour.commands = [c.name for c in handle.commands]
        tour.opening = [(u.kind, u.text or "") for u in seen]
        await _stop(handle, tour)
        journal = await svc.sessions.read_journal(handle.session_id)
        tour.turn_end = dict(journal[-1].raw) if journal and journal[-1].kind == "turn_end" else {}
        tour.auth_status = handle.auth_status.line() if handle.auth_status is not None else None
    finally:
        handle.dispose()  # returns at once; the agent's whole tree goes in the background
    if group is not None:
        tour.group_left = await anyio.to_thread.run_sync(processes_in_group, group)
    tour.home_left = await anyio.to_thread.run_sync(processes_with_home, home)


async def _sign_in(svc: silo_nb.AgentsService, vendor: Vendor, home: Path, tour: Tour) -> None:
    name = f"{vendor.id}-nokey"
    if not vendor.session:  # its doctor report comes from here
        tour.doctor = await svc.sessions.doctor(name)
    try:
        handle = await svc.sessions.connect(name)
    except silo_nb.AgentSignInError as exc:
        tour.sign_in, tour.sign_in_at, tour.sign_in_methods = (
            str(exc),
            "connect",
            tuple(m.id for m in exc.methods),
        )
    else:
        try:
            await handle.prompt([{"type": "text", "text": "hi"}])
        except silo_nb.AgentSignInError as exc:
            tour.sign_in, tour.sign_in_at = str(exc), "prompt"
            tour.sign_in_methods = tuple(m.id for m in exc.methods)
        finally:
            await handle.aclose()
    await background_closes()
    tour.home_left += await anyio.to_thread.run_sync(processes_with_home, home)


async def _tour(root: Path, homes: Mapping[str, Path]) -> tuple[dict[str, Tour], list[logging.LogRecord]]:
    profiles = []
    for vendor in VENDORS.values():
        if vendor.session:
            profiles.append(profile(vendor, homes[vendor.id], cancel_timeout=vendor.cancel_timeout))
        if vendor.id != "opencode":  # opencode needs no sign-in for its free models
            profiles.append(profile(vendor, homes[f"{vendor.id}-nokey"], keys=False))
    (root / "config" / "silo").mkdir(parents=True)
    (root / "config" / "silo" / "profiles.json").write_text(json.dumps({"profiles": profiles}))
    (root / "project").mkdir()
    svc = silo_nb.AgentsService(
        workspace_dir=root / "project", config_dirs=[root / "config"], data_dir=root / "data"
    )
    tours = {name: Tour(name) for name in VENDORS}
    limiter = anyio.CapacityLimiter(CONCURRENT)

    async def run(step: Any, vendor: Vendor, home: Path) -> None:
        tour = tours[vendor.id]
        async with limiter:
            try:
                await step(svc, vendor, home, tour)
            except Exception as exc:
                tour.error = (tour.error + "\n" if tour.error else "") + f"{step.__name__}: {_error(exc)}"

    records = _Records()
    logger = logging.getLogger("silo_nb")
    previous = logger.level
    logger.addHandler(records)
    logger.setLevel(logging.DEBUG)
    try:
        async with anyio.create_task_group() as tg:
            for vendor in VENDORS.values():
                if vendor.session:
                    tg.start_soon(run, _work, vendor, homes[vendor.id])
                if vendor.id != "opencode":
                    tg.start_soon(run, _sign_in, vendor, homes[f"{vendor.id}-nokey"])
        await background_closes()
        closing = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]  # dispose's closes
        if closing:
            await asyncio.wait(closing, timeout=30)
    finally:
        logger.removeHandler(records)
        logger.setLevel(previous)
    return tours, records.records


def run_tour(root: Path, homes: Mapping[str, Path]) -> tuple[dict[str, Tour], list[logging.LogRecord]]:
    """The tour of every agent (see the module docstring), in its own event loop, with the process
    environment scrubbed (``vendor_agents.agent_environment``); and silo_nb's log records meanwhile."""
    with agent_environment():
        return anyio.run(_tour, root, homes)
