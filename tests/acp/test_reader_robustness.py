"""The JSON-RPC reader survives every line (issue 8, items 1 and 4).

Line-level cases run over the in-process pipe (the harness of ``test_jsonrpc.py``): each poison line is
followed by a valid notification that must still arrive, and ``run()`` must still be running. The same
lines from a real subprocess agent, through a whole session, are in the last test. Hypothesis is not
installed, so "arbitrary bytes" is a seeded random loop.
"""

from __future__ import annotations

import json
import logging
import random
import sys
from typing import Any

import anyio
import pytest
from anyio.abc import ByteReceiveStream

from silo_nb.acp import AgentConnection, InProcessTransport
from silo_nb.acp.framing import cut_depth, nesting_depth, nesting_exceeds
from silo_nb.acp.jsonrpc import MAX_NESTING, AcpConnectionClosed
from tests.conftest import AGENTS, Workspace
from tests.support.jsonrpc import connected, encode, notification
from tests.work import calls

RECV_TIMEOUT = 3.0


async def collecting(**kwargs: Any) -> tuple[list[Any], dict[str, Any]]:
    got: list[Any] = []
    return got, {"notification_handlers": {"note": got.append}, **kwargs}


async def wait_for(got: list[Any], count: int) -> None:
    with anyio.fail_after(RECV_TIMEOUT):
        while len(got) < count:
            await anyio.sleep(0.005)


def nested(depth: int, leaf: str = "1") -> bytes:
    return b"[" * depth + leaf.encode() + b"]" * depth


def acp_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.name == "silo_nb.acp" and r.levelno >= logging.WARNING
    ]


POISON_LINES: dict[str, bytes] = {
    "huge integer": b'{"jsonrpc":"2.0","method":"note","params":' + b"7" * 5000 + b"}\n",
    "nested 100,000 deep": b'{"jsonrpc":"2.0","method":"note","params":' + nested(100_000) + b"}\n",
    "objects nested 100,000 deep": b'{"a":' * 100_000 + b"1" + b"}" * 100_000 + b"\n",
    "a batch of deep values": b"[" + b",".join([nested(MAX_NESTING + 5)] * 3) + b"]\n",
}


@pytest.mark.parametrize("name", list(POISON_LINES))
async def test_a_poison_line_is_logged_and_skipped(name: str, caplog: pytest.LogCaptureFixture) -> None:
    got, kwargs = await collecting()
    async with connected(**kwargs) as h:
        await h.agent.write(POISON_LINES[name])
        await h.agent.send(notification("note", {"n": 1}))
        await wait_for(got, 1)
        assert got == [{"n": 1}]
        assert not h.run_done.is_set() and not h.conn.is_closed
        # One line: the error and the start of the offending line, not the whole 200 KB of it.
        (warning,) = acp_warnings(caplog)
        assert "skipped" in warning and len(warning) < 400
        assert POISON_LINES[name][:40].decode() in warning


async def test_nesting_up_to_the_cap_is_delivered_and_one_more_is_not(
    caplog: pytest.LogCaptureFixture,
) -> None:
    got, kwargs = await collecting()
    async with connected(**kwargs) as h:
        for depth in (MAX_NESTING, MAX_NESTING + 1):  # the message object holds the rest
            params = nested(depth - 1, '"x[{\\"]"')  # brackets inside strings do not count
            await h.agent.write(b'{"jsonrpc":"2.0","method":"note","params":' + params + b"}\n")
        await h.agent.send(notification("note", "after"))
        await wait_for(got, 2)
        assert got[1] == "after"
        value, depth = got[0], 1
        while isinstance(value, list):
            value, depth = value[0], depth + 1
        assert value == 'x[{"]' and depth == MAX_NESTING
        assert any(f"deeper than {MAX_NESTING}" in w for w in acp_warnings(caplog))


async def test_a_10_mb_deeply_nested_line_is_checked_in_a_few_calls() -> None:
    """The depth check runs C-speed passes over the bytes, never a Python loop per byte: counted in calls
    (issue 21: the loop-gap bound this test had failed on a loaded machine; the figures are in
    tests/RELIABILITY.md)."""
    got, kwargs = await collecting()
    line = b'{"jsonrpc":"2.0","method":"note","params":' + nested(5_000_000) + b"}\n"
    assert len(line) > 10_000_000
    async with connected(**kwargs) as h:
        await h.agent.write(line)
        await h.agent.send(notification("note", "after"))
        await wait_for(got, 1)
    assert got == ["after"]
    assert nesting_exceeds(line) and calls(nesting_exceeds, line) < 100


async def test_an_answer_that_cannot_be_encoded_as_utf8_is_escaped_not_fatal() -> None:
    async def echo(params: Any) -> Any:
        return params

    got, kwargs = await collecting(request_handlers={"echo": echo})
    async with connected(**kwargs) as h:
        # A lone surrogate is valid JSON; our reply carrying it back must not kill the reader or the writer.
        await h.agent.write(b'{"jsonrpc":"2.0","id":"\\ud800","method":"echo","params":"\\udfff"}\n')
        await h.agent.write(b'{"jsonrpc":"2.0","id":["\\ud801"],"method":"nope"}\n')
        replies = [await h.agent.recv(), await h.agent.recv()]
        assert {"id": "\ud800", "result": "\udfff"}.items() <= replies[0].items()
        assert replies[1]["id"] == ["\ud801"] and replies[1]["error"]["code"] == -32601
        await h.agent.send(notification("note", 2))
        await wait_for(got, 1)
        assert not h.run_done.is_set()


# -- ids: matched by JSON type and value -------------------------------------------------------------


async def test_response_ids_match_by_json_type(caplog: pytest.LogCaptureFixture) -> None:
    async with connected() as h:
        first = h.conn.start_request("a")  # id 0
        second = h.conn.start_request("b")  # id 1
        assert [(await h.agent.recv())["id"] for _ in range(2)] == [0, 1]
        for wrong in (False, 0.0, "0", True, 1.0, "1", [1], None, 99):
            await h.agent.send({"jsonrpc": "2.0", "id": wrong, "result": f"wrong {wrong!r}"})
        await h.agent.send({"jsonrpc": "2.0", "id": 1, "result": "right 1"})
        await h.agent.send({"jsonrpc": "2.0", "id": 0, "result": "right 0"})
        with anyio.fail_after(RECV_TIMEOUT):
            assert await second.wait() == "right 1"
            assert await first.wait() == "right 0"
        warnings = acp_warnings(caplog)
        assert any("unknown id" in w and "99" in w for w in warnings)
        assert any("unknown id" in w and "true" in w for w in warnings)


# -- the reader itself ending -------------------------------------------------------------------------


class BreaksAfter(ByteReceiveStream):
    """A stream that raises an unexpected error (not EOF) once ``chunks`` chunks have been read."""

    def __init__(self, inner: ByteReceiveStream, chunks: int) -> None:
        self._inner = inner
        self._left = chunks

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._left <= 0:
            raise OSError(5, "Input/output error")
        self._left -= 1
        return await self._inner.receive(max_bytes)

    async def aclose(self) -> None:
        await self._inner.aclose()


async def test_a_stream_error_closes_the_connection_properly(caplog: pytest.LogCaptureFixture) -> None:
    agent_stopped = anyio.Event()

    async def agent(stdin: ByteReceiveStream, stdout: Any) -> None:
        await stdout.send(encode(notification("note", 1)))
        try:
            await anyio.sleep_forever()  # keeps running: only the client's shutdown may stop it
        finally:
            agent_stopped.set()

    transport = InProcessTransport(agent)
    transport.receive = BreaksAfter(transport.receive, 1)
    got: list[Any] = []
    connection = AgentConnection.open(transport, notification_handlers={"note": got.append})
    reasons: list[str] = []
    connection.on_closed(reasons.append)
    pending = connection.rpc.start_request("session/prompt")
    with anyio.fail_after(RECV_TIMEOUT):
        with pytest.raises(AcpConnectionClosed, match=r"reading from the agent failed: .*Input/output"):
            await pending.wait()
        await agent_stopped.wait()  # the transport was shut down
        while not reasons:
            await anyio.sleep(0.005)
    assert got == [1]
    assert reasons[0].startswith("reading from the agent failed")
    assert not connection.is_open
    assert any("reading from the agent failed" in w for w in acp_warnings(caplog))
    await connection.aclose()


# -- arbitrary input ----------------------------------------------------------------------------------


def random_value(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.randrange(9 if depth < 6 else 5)
    if pick == 0:
        return rng.choice([None, True, False, 0, -1, 1.5, 1e308, 2**70])
    if pick == 1:
        return "".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0x10FFFF)])) for _ in range(5))
    if pick in (2, 3, 4):
        return rng.choice(["2.0", "note", "$/cancel_request", "session/update", "id", "x"])
    if pick in (5, 6):
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["jsonrpc", "id", "method", "params", "result", "error", "requestId", "code", "message"]
    return {rng.choice(keys): random_value(rng, depth + 1) for _ in range(rng.randrange(5))}


def random_bytes(rng: random.Random) -> bytes:
    alphabet = b'{}[]":,\\ \n0123456789-+.eEtruefalsnul\xff\xc3\x80\xed\xa0\x80'
    kind = rng.randrange(5)
    if kind == 3:  # the known killers, in random places: a huge integer, deep nesting
        return b'{"jsonrpc":"2.0","method":"note","params":[' + b"9" * rng.randrange(4000, 6000) + b"]}\n"
    if kind == 4:
        depth = rng.randrange(200, 3000)
        return b'{"method":"note","params":' + rng.choice([b"[", b'{"k":']) * depth + b"\n"
    if kind == 0:
        return rng.randbytes(rng.randrange(200))
    if kind == 1:
        return bytes(rng.choice(alphabet) for _ in range(rng.randrange(300)))
    return json.dumps(random_value(rng)).encode()[: rng.randrange(1, 400)] + rng.choice([b"\n", b""])


async def test_arbitrary_bytes_and_json_never_end_the_reader() -> None:
    rng = random.Random(8)

    async def answer(params: Any) -> Any:
        return params

    got, kwargs = await collecting(request_handlers={"note": answer, "echo": answer})
    async with connected(**kwargs) as h, anyio.create_task_group() as tg:

        async def drain() -> None:  # our replies to the random requests must not back up the pipe
            while True:
                await h.agent.read_line()

        tg.start_soon(drain)
        for _ in range(3000):
            data = random_bytes(rng) if rng.random() < 0.6 else json.dumps(random_value(rng)).encode() + b"\n"
            cut = rng.randrange(len(data) + 1)
            await h.agent.write_chunks([data[:cut], data[cut:]])
        await h.agent.write(b"\n")
        await h.agent.send(notification("note", "sentinel"))
        with anyio.fail_after(RECV_TIMEOUT):
            while "sentinel" not in got:
                await anyio.sleep(0.005)
        assert not h.run_done.is_set() and not h.conn.is_closed
        tg.cancel_scope.cancel()


# -- a real agent, through a session ------------------------------------------------------------------


async def test_a_subprocess_agent_sending_poison_lines_keeps_its_session(workspace: Workspace) -> None:
    workspace.add_profiles(
        {
            "id": "poison",
            "label": "Poison",
            "command": sys.executable,
            "args": [str(AGENTS / "poison_lines.py")],
        }
    )
    svc = workspace.service()
    with anyio.fail_after(30):
        async with await svc.sessions.connect("poison") as handle:
            updates: list[Any] = []
            handle.on_update(updates.append)
            assert (await handle.prompt([{"type": "text", "text": "go"}])).stop_reason == "end_turn"
            texts = [u.text for u in updates if u.text]
            assert texts == ["before the poison", "after the poison"]
            (deep,) = [u for u in updates if u.kind == "tool_call"]
            assert deep.tool_call is not None and deep.tool_call.tool_call_id == "deep-300"
            assert "nested deeper than" in json.dumps(deep.tool_call.raw_input)
            # The session keeps working: a second turn, and everything is in the journal.
            assert (await handle.prompt([{"type": "text", "text": "again"}])).stop_reason == "end_turn"
            session_id = handle.session_id
        journal = await svc.sessions.read_journal(session_id)
        kinds = [u.kind for u in journal]
        assert kinds.count("tool_call") == 2 and kinds.count("user_message_chunk") == 2
        assert "nested deeper than" in json.dumps([u.to_json() for u in journal])


def test_depth_helpers_count_structure_not_string_contents() -> None:
    assert not nesting_exceeds(b'["' + b"[" * 600 + b'"]')  # brackets in a string
    assert not nesting_exceeds(b'["\\"' + b"[" * 600 + b'"]')  # ...after an escaped quote
    assert nesting_exceeds(b'["\\\\"' + b",[" * 600 + b"]" * 600 + b"]")  # an escaped backslash ends it
    zigzag = b"[[]," * 600 + b"1" + b"]" * 600  # never a run of opens: the running sum decides
    assert nesting_exceeds(zigzag, 599) and not nesting_exceeds(zigzag, 601)
    flat = [{"a": [i]} for i in range(1000)]
    assert cut_depth(flat, 3, "M") is flat  # nothing cut: not even copied
    deep: Any = {"k": [[["leaf"]]]}
    assert cut_depth(deep, 3, "M") == {"k": [["M"]]} and deep == {"k": [[["leaf"]]]}


def _depth_by_hand(line: bytes) -> int:
    """How deep a parser reading ``line`` would go, one byte at a time (the reference :func:`nesting_depth`
    is checked against): a string runs from a quote to the next quote not escaped by a backslash, and a
    backslash outside a string ends the reading (no JSON parser reads past it)."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in line:
        if in_string:
            escaped, in_string = (False, True) if escaped else (byte == 0x5C, byte != 0x22)
        elif byte == 0x22:
            in_string = True
        elif byte == 0x5C:
            break
        elif byte in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        elif byte in b"]}":
            depth -= 1
    return deepest


def _random_value(rng: random.Random, depth: int) -> Any:
    if depth == 0 or rng.random() < 0.3:
        return "".join(rng.choice('"\\[]{}a') for _ in range(rng.randint(0, 4)))
    items = [_random_value(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    return items if rng.random() < 0.5 else {f"k{i}[": item for i, item in enumerate(items)}


def test_depth_agrees_with_a_byte_by_byte_reading_of_strings_escapes_and_brackets() -> None:
    """The depth read by C passes against a byte-by-byte reading: on JSON whose strings hold quotes,
    backslashes and brackets it is the same (over the limit, limit + 1; under it, never less); on any
    bytes at all (quotes, backslashes and brackets at random) a line a parser would read deeper than the
    limit is always refused."""
    rng = random.Random(21)
    for _ in range(2000):
        line = json.dumps(_random_value(rng, rng.randint(1, 9))).encode()
        depth, bound = _depth_by_hand(line), nesting_depth(line, 4)
        assert (bound > 4) == (depth > 4) and bound >= min(depth, 5), line
    alphabet = b'""\\[[[{]]}a,'
    for _ in range(3000):
        line = bytes(rng.choice(alphabet) for _ in range(rng.randint(20, 120)))
        assert nesting_exceeds(line, 8) or _depth_by_hand(line) <= 8, line
    options = [
        {"optionId": f"o{i}", "name": f'Option "{i}" [x]', "kind": "allow_once"} for i in range(10_000)
    ]
    line = json.dumps({"params": {"options": options}}).encode()
    assert nesting_depth(line) == 4 == _depth_by_hand(line)


async def test_a_yield_lets_a_chain_of_queued_callbacks_finish() -> None:
    """Between two slices of a flood, a request that needs several loop turns (socket → dispatch → cell
    → reply) goes all the way, not one hop per slice; with nothing else queued a yield is one turn."""
    import asyncio

    from silo_nb.acp._give_way import YIELD_MORE_TURNS, give_way

    loop = asyncio.get_running_loop()
    hops: list[int] = []

    def hop(n: int) -> None:
        hops.append(n)
        if n < 5:
            loop.call_soon(hop, n + 1)

    loop.call_soon(hop, 1)
    await give_way()
    assert hops == [1, 2, 3, 4, 5]

    endless: list[int] = []
    stop = False

    def again() -> None:  # a callback that always queues another: the extra turns stay bounded
        endless.append(1)
        if not stop:
            loop.call_soon(again)

    loop.call_soon(again)
    await give_way()
    assert len(endless) <= YIELD_MORE_TURNS + 1
    stop = True
    await asyncio.sleep(0)
