"""The real ``python -m silo_nb_agents.demo`` process: start-up, a whole turn, stdin EOF, stderr, files.

The rest of the behaviour is proven in-process through ``serve``, which shares the same core; these few
tests cover what only a process has (stdin/stdout adapters, exit status, stderr, separate interpreters).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from tests.demo_agent.helpers import (
    CWD,
    EDIT_SEQUENCE,
    REPO_ROOT,
    ProcessLink,
    answer_with,
    bounded,
    spawned_agent,
    updates,
    wire_sequence,
)


@pytest.mark.asyncio
@bounded
async def test_a_whole_edit_turn_over_stdio(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    async with spawned_agent(tmp_path) as wire:
        assert (await wire.initialize())["agentInfo"]["name"] == "silo-demo"
        session_id, _ = await wire.new_session(str(project))
        seen, response = await wire.prompt(session_id, "Please edit my notes", answer_with("allow-once"))
        assert response["result"]["stopReason"] == "end_turn"
        assert wire_sequence(seen) == EDIT_SEQUENCE
        assert updates(seen)[-3]["content"]["text"] == "Edited notes.md."
        assert await wire.stop() == 0
    assert (project / "notes.md").read_text(encoding="utf-8") == "# Notes\n\n- Please edit my notes\n"
    assert (tmp_path / f"{session_id}.json").is_file()


@pytest.mark.asyncio
@bounded
async def test_stdin_eof_exits_zero_promptly_even_mid_turn(tmp_path: Path) -> None:
    async with spawned_agent(tmp_path) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session()
        await wire.request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "slow"}]}
        )
        await wire.recv()
        assert await wire.stop() == 0  # @bounded is the hang guard: a turn left running would trip it


@pytest.mark.asyncio
@bounded
async def test_load_in_a_second_process(tmp_path: Path) -> None:
    async with spawned_agent(tmp_path) as first:
        await first.initialize()
        session_id, _ = await first.new_session()
        turn, _ = await first.prompt(session_id, "hello")
    async with spawned_agent(tmp_path) as second:
        await second.initialize()
        replayed, response = await second.call("session/load", {"sessionId": session_id, "cwd": CWD})
        assert "result" in response
        assert updates(replayed)[1:] == updates(turn)


@pytest.mark.asyncio
@bounded
async def test_debug_log_on_stderr_only(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    for debug in ("1", ""):
        env = {**os.environ, "SILO_NB_DEMO_DEBUG": debug}
        async with spawned_agent(not_a_dir, env=env, stderr=asyncio.subprocess.PIPE) as wire:
            session_id, _ = await wire.new_session()  # its save fails: the state dir is a file
            assert await wire.stop() == 0
            assert isinstance(wire.link, ProcessLink)
            stdout, stderr = await wire.link.proc.communicate()
        assert stdout == b""
        lines = stderr.decode().splitlines()
        if debug:
            assert lines and lines[0].startswith(f"[silo-demo] could not save {session_id}: ")
        else:
            assert lines == []


@pytest.mark.asyncio
@bounded
async def test_stdin_from_a_regular_file_or_dev_null(tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}},
    ]
    requests.write_text("".join(json.dumps(line) + "\n" for line in lines))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    with requests.open("rb") as stdin:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "silo_nb_agents.demo",
            "--state-dir",
            str(tmp_path / "state"),
            stdin=stdin,
            stdout=asyncio.subprocess.PIPE,
            env=env,
        )
        stdout, _ = await proc.communicate()
    assert proc.returncode == 0
    answers = {m["id"]: m for m in map(json.loads, stdout.splitlines())}
    assert answers[1]["result"]["protocolVersion"] == 1
    assert answers[2]["result"] == {"sessions": []}

    # /dev/null is a device epoll refuses: it must read as an empty stream, not hang.
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "silo_nb_agents.demo", stdin=asyncio.subprocess.DEVNULL, env=env
    )
    assert await asyncio.wait_for(proc.wait(), 5.0) == 0
