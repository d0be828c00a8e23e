"""``serve`` itself: end of stream, bad flags, fatal errors, two agents in one process, defaults, framing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import anyio
import anyio.abc
import pytest

from silo_nb_agents.demo import serve
from silo_nb_agents.demo.options import DEFAULT_DELAY, parse_args
from silo_nb_agents.demo.rpc_endpoint import LineReader
from tests.demo_agent.helpers import CWD, answer_with, bounded, byte_pipe, running_agent, updates


@pytest.mark.asyncio
@bounded
async def test_end_of_stream_mid_turn_returns_promptly_and_closes_the_output(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session()
        prompt_id = await wire.request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "slow"}]}
        )
        await wire.recv()
        assert await wire.stop() == 0  # the slow turn is cancelled, not waited for (below)
        rest: list[bytes] = []
        while line := await wire.link.read_line():  # the output ends: serve closed its send stream
            rest.append(line)
        assert all(json.loads(line).get("id") != prompt_id for line in rest), "the turn was cancelled"


@pytest.mark.asyncio
@bounded
async def test_end_of_stream_before_anything_returns_at_once(tmp_path: Path) -> None:
    to_agent, agent_stdin = byte_pipe()
    agent_stdout, from_agent = byte_pipe()
    await to_agent.aclose()
    await serve(agent_stdin, agent_stdout, ["--state-dir", str(tmp_path)])
    with pytest.raises(anyio.EndOfStream):
        await from_agent.receive()


@pytest.mark.asyncio
@pytest.mark.parametrize("argv", [["--bogus"], ["--delay", "soon"], ["--help"]])
async def test_bad_flags_raise_value_error_instead_of_exiting(argv: list[str]) -> None:
    _, agent_stdin = byte_pipe()
    agent_stdout, _ = byte_pipe()
    with pytest.raises(ValueError, match=r"silo_nb_agents\.demo"):
        await serve(agent_stdin, agent_stdout, argv)


class _FailingReceive(anyio.abc.ByteReceiveStream):
    """Hands out one request, then breaks (as a torn-down transport would)."""

    def __init__(self, first: bytes) -> None:
        self._first: bytes | None = first

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._first is not None:
            data, self._first = self._first, None
            return data
        await anyio.sleep(0.05)
        raise anyio.BrokenResourceError("the transport broke")

    async def aclose(self) -> None:
        pass


@pytest.mark.asyncio
@bounded
async def test_a_broken_input_is_raised_after_clean_up(tmp_path: Path) -> None:
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    agent_stdout, from_agent = byte_pipe()
    receive = _FailingReceive(json.dumps(request).encode() + b"\n")
    with pytest.raises(anyio.BrokenResourceError):
        await serve(receive, agent_stdout, ["--state-dir", str(tmp_path)])
    answer = json.loads(await from_agent.receive())
    assert answer["id"] == 1 and answer["result"]["protocolVersion"] == 1
    with pytest.raises(anyio.EndOfStream):
        await from_agent.receive()


@pytest.mark.asyncio
@bounded
async def test_two_agents_in_one_process_share_only_the_state_dir(tmp_path: Path) -> None:
    shared, elsewhere, project = tmp_path / "shared", tmp_path / "elsewhere", tmp_path / "project"
    project.mkdir()
    async with (
        running_agent(shared) as first,
        running_agent(shared) as second,
        running_agent(elsewhere) as third,
    ):
        for wire in (first, second, third):
            await wire.initialize()
        session_id, _ = await first.new_session(str(project))
        await first.prompt(session_id, "hello")

        # Not in the other agents' memory: a prompt there does not find it.
        for wire in (second, third):
            _, response = await wire.prompt(session_id, "hi")
            assert response["error"]["message"] == f"Session not found: {session_id}"
        # Through the shared directory it loads; through another one it does not exist.
        replayed, loaded = await second.call("session/load", {"sessionId": session_id, "cwd": str(project)})
        assert "result" in loaded and len(updates(replayed)) > 1
        _, missing = await third.call("session/load", {"sessionId": session_id, "cwd": CWD})
        assert missing["error"]["code"] == -32002

        # Both now run their own copy: request ids, turns and histories are per agent.
        seen_first, _ = await first.prompt(session_id, "edit", answer_with("allow-once"))
        seen_second, _ = await second.prompt(session_id, "edit", answer_with("reject-once"))
        [ask_first] = [m for m in seen_first if m.get("method") == "session/request_permission"]
        [ask_second] = [m for m in seen_second if m.get("method") == "session/request_permission"]
        assert ask_first["id"] == ask_second["id"] == 0
        assert "Edited notes.md." in json.dumps(seen_first)
        assert "Left notes.md unchanged." in json.dumps(seen_second)


@pytest.mark.asyncio
@bounded
async def test_environment_gives_the_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SILO_NB_DEMO_STATE_DIR", str(tmp_path / "from-env"))
    monkeypatch.setenv("SILO_NB_DEMO_DELAY", "0.25")
    options = parse_args([], exit_on_error=False)
    assert (options.delay, options.state_dir) == (0.25, tmp_path / "from-env")
    assert parse_args(["--delay", "-1", "--state-dir", "x"]).delay == 0.0
    monkeypatch.setenv("SILO_NB_DEMO_DELAY", "not a number")
    assert parse_args([]).delay == DEFAULT_DELAY
    monkeypatch.setenv("SILO_NB_DEMO_DELAY", "0")

    to_agent, agent_stdin = byte_pipe()
    agent_stdout, from_agent = byte_pipe()
    task = asyncio.ensure_future(serve(agent_stdin, agent_stdout))  # no argv: all from the environment
    new = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": CWD, "mcpServers": []}}
    await to_agent.send(json.dumps(new).encode() + b"\n")
    session_id = json.loads(await from_agent.receive())["result"]["sessionId"]
    await to_agent.aclose()
    await task
    assert (tmp_path / "from-env" / f"{session_id}.json").is_file()


@pytest.mark.asyncio
async def test_debug_log_reports_a_failed_save(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    for debug in ("", "1"):
        monkeypatch.setenv("SILO_NB_DEMO_DEBUG", debug)
        async with running_agent(not_a_dir) as wire:
            session_id, _ = await wire.new_session()
        err = capsys.readouterr().err
        if debug:
            assert err.startswith(f"[silo-demo] could not save {session_id}: ")
        else:
            assert err == ""


def _chunks_reader(chunks: list[bytes]) -> LineReader:
    pending = list(chunks)

    async def read() -> bytes:
        return pending.pop(0) if pending else b""

    return LineReader(read, limit=16)


async def _all_lines(reader: LineReader) -> list[bytes]:
    lines: list[bytes] = []
    while (line := await reader.readline()) is not None:
        lines.append(line)
    return lines


@pytest.mark.asyncio
async def test_line_framing_across_chunks_and_oversized_lines() -> None:
    reader = _chunks_reader([b"one\ntw", b"o\n\nthree", b"\n", b"x" * 10, b"y" * 10, b"z\nfour\nlast"])
    assert await _all_lines(reader) == [b"one", b"two", b"", b"three", b"four", b"last"]
    # An oversized line still unterminated at end of stream is dropped too.
    assert await _all_lines(_chunks_reader([b"ok\n", b"w" * 40])) == [b"ok"]
