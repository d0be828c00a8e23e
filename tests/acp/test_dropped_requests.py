"""A request the reader drops (nested too deep, longer than the line limit, not JSON) is still answered
with an error when its top-level ``id`` and ``method`` can be read from the line's ends, so the agent does
not wait forever (issue 28); an answer to one of our requests dropped so fails that request. Only the top
level counts: an ``id`` inside ``params`` is never taken for the request's. The same through a real
subprocess agent that waits for its answer is the last test."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import anyio
import pytest

from silo_nb.acp.jsonrpc import MAX_NESTING, AcpRpcError
from silo_nb.acp.salvage import SCAN_BYTES, salvage
from tests.conftest import AGENTS, Workspace
from tests.support.jsonrpc import connected, notification

INVALID_REQUEST = -32600
PARSE_ERROR = -32700


def deep(depth: int = 100_000) -> bytes:
    return b"[" * depth + b'{"id":99,"method":"inner"}' + b"]" * depth


def request_line(head: bytes, params: bytes, tail: bytes = b"") -> bytes:
    return b'{"jsonrpc":"2.0",' + head + b'"params":' + params + tail + b"}\n"


async def next_answer(h: Any) -> dict[str, Any]:
    """The client's next line to the agent (a sentinel notification after it proves none was skipped)."""
    message = await h.agent.recv()
    assert "method" not in message, message
    return message


@pytest.mark.parametrize(
    ("line", "request_id", "code"),
    [
        pytest.param(
            request_line(b'"id":7,"method":"fs/read_text_file",', deep()), 7, INVALID_REQUEST, id="id-first"
        ),
        pytest.param(
            request_line(b'"method":"fs/read_text_file",', deep(), b',"id":"r-8"'),
            "r-8",
            INVALID_REQUEST,
            id="id-last",
        ),
        pytest.param(
            request_line(b'"id" : 9 , "method":"x",', deep(MAX_NESTING + 1)),
            9,
            INVALID_REQUEST,
            id="one-too-deep",
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","id":10,"method":"x","params":{"a":}}\n', 10, PARSE_ERROR, id="not-json"
        ),
    ],
)
async def test_a_dropped_request_is_answered_with_an_error_naming_why(
    line: bytes, request_id: Any, code: int, caplog: pytest.LogCaptureFixture
) -> None:
    got: list[Any] = []
    async with connected(notification_handlers={"note": got.append}) as h:
        await h.agent.write(line)
        answer = await next_answer(h)
        assert answer["id"] == request_id and answer["error"]["code"] == code
        assert "dropped" in answer["error"]["message"] and len(answer["error"]["message"]) < 300
        await h.agent.send(notification("note", 1))  # the reader goes on
        with anyio.fail_after(3):
            while not got:
                await anyio.sleep(0.005)
        assert not h.conn.is_closed


async def test_a_request_longer_than_the_limit_is_answered_whether_or_not_its_newline_came_with_it() -> None:
    limit = 100_000
    big = b'"' + b"x" * (limit * 3) + b'"'
    async with connected(max_line_bytes=limit) as h:
        await h.agent.write(request_line(b'"id":1,"method":"fs/write_text_file",', big))  # one write
        assert (await next_answer(h))["id"] == 1
        # In pieces: the line is dropped before its end arrives; the id is at its end.
        line = request_line(b'"method":"fs/write_text_file",', big, b',"id":2')
        await h.agent.write_chunks([line[i : i + 65536] for i in range(0, len(line), 65536)])
        answer = await next_answer(h)
        assert answer["id"] == 2 and answer["error"]["code"] == INVALID_REQUEST
        assert f"{limit:,}" in answer["error"]["message"]


async def test_an_answer_to_our_request_that_is_dropped_fails_that_request() -> None:
    async with connected() as h:
        call = h.conn.start_request("session/prompt", {})
        sent = await h.agent.recv()
        await h.agent.write(b'{"jsonrpc":"2.0","id":%d,"result":' % sent["id"] + deep() + b"}\n")
        with anyio.fail_after(3), pytest.raises(AcpRpcError, match="dropped"):
            await call.wait()


async def test_nothing_is_answered_when_the_top_level_id_cannot_be_known(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "silo_nb.acp")
    lines = [
        b'{"jsonrpc":"2.0","method":"note","params":' + deep() + b"}\n",  # a notification: nothing to answer
        b'{"jsonrpc":"2.0","method":"x","params":'
        + deep()
        + b',"id":3,"more":{}}\n',  # id between containers
        b'{"jsonrpc":"2.0","params":' + deep() + b',"method":"x","tail":{"id":4}}\n',  # a nested id
        b'[{"jsonrpc":"2.0","id":5,"method":"x","params":' + deep(MAX_NESTING) + b"}]\n",  # a batch
    ]
    async with connected() as h:
        for line in lines:
            await h.agent.write(line)
        await h.agent.write(b'{"jsonrpc":"2.0","id":"last","method":"nope"}\n')  # a request it can read
        answer = await h.agent.recv()
        assert answer["id"] == "last" and answer["error"]["code"] == -32601  # the only answer sent
    skipped = [r for r in caplog.records if "skipped a message" in r.getMessage()]
    assert len(skipped) == len(lines)  # each still logged, as before


def test_salvage_reads_only_the_top_level_and_only_what_is_certain() -> None:
    assert salvage(b'{"id":1,"method":"m","params":[', b"") == (1, "m", False)
    assert salvage(b"", b'],"method":"m","id":"a\\"b"}') == ('a"b', "m", False)
    assert salvage(b'{"id":1,"result":{', b"") == (1, None, True)
    assert salvage(b'{"params":{"id":1,"method":"m"', b"") is None  # nested: never taken
    assert salvage(b'{"id":1,"method":"m",', b'],"id":2}') is None  # two different ids: not certain
    assert salvage(b'{"id":true,"method":"m",', b"") is None  # not a JSON-RPC id
    assert salvage(b'{"id":1,"method":"' + b"m" * SCAN_BYTES, b"") is None  # cut off: not certain
    assert salvage(b'{"a":"x\\",\\"id\\":1,","method":"m","params":[', b"") is None  # an id inside a string
    assert salvage(b"", b'"x,\\"id\\":1}"}') is None


async def test_a_real_agent_sending_a_too_deep_request_gets_an_error_and_goes_on(
    workspace: Workspace,
) -> None:
    workspace.add_profiles(
        {
            "id": "deep",
            "label": "Deep",
            "command": sys.executable,
            "args": [str(AGENTS / "raw_agent.py"), "asks-too-deep"],
        }
    )
    svc = workspace.service()
    with anyio.fail_after(30):
        async with await svc.sessions.connect("deep") as handle:
            updates: list[Any] = []
            handle.on_update(updates.append)
            assert (await handle.prompt([{"type": "text", "text": "go"}])).stop_reason == "end_turn"
    report = json.loads("".join(u.text for u in updates if u.text))
    assert report == {"deep-first": INVALID_REQUEST, "deep-last": INVALID_REQUEST, "after": -32601}
