"""Property tests for the JSON-RPC reader (issue 8, item 10): arbitrary bytes and arbitrary JSON, cut at
arbitrary boundaries, through the real stack — ``LineFramer`` + ``JsonRpcConnection`` + ``AgentConnection``
over ``InProcessTransport`` (in-memory pipes that keep the agent's write boundaries, so the reader sees
exactly the chunks chosen here).

After the garbage the connection must still work both ways: the agent asks us something and gets our
answer, our pending request is answered with the agent's exact result, a marker notification arrives, and
when the agent exits the close listeners run. Nothing may be logged at ERROR (an exception in a handler),
and the whole exchange is bounded in time.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream
from hypothesis import given, settings
from hypothesis import strategies as st

from silo_nb.acp import AgentConnection, InProcessTransport
from silo_nb.acp.framing import MAX_NESTING, LineFramer, decode_line
from silo_nb.updates.parse import parse_update
from tests.property.strategies import examples, json_line, json_values, wire_updates, within

ASK_ID = 7777  # the agent's own request; garbage never uses it
TOKEN = "after-the-garbage"

# JSON for garbage lines: no "id" keys at any depth, so no batch can answer our request by chance.
_garbage_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=8).filter(lambda k: k != "id"), inner, max_size=4)
    ),
    max_leaves=10,
)
_foreign_ids = (
    st.integers(min_value=10_000)
    | st.integers(max_value=-1)
    | st.booleans()
    | st.none()
    | st.floats()
    | st.text(max_size=6)
    | st.lists(st.integers(), max_size=2)
)
_methods = st.sampled_from(
    ["session/update", "session/request_permission", "$/cancel_request", "fs/read_text_file", "x"]
) | st.text(max_size=12)
_rpc_shaped = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0")},
    optional={
        "id": _foreign_ids,
        "method": _methods,
        "params": _garbage_json,
        "result": _garbage_json,
        "error": _garbage_json,
    },
)
_updates = st.builds(
    lambda update, sid: {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": sid, "update": update},
    },
    wire_updates,
    st.text(max_size=4),
)
_nasty_lines = st.sampled_from(
    [
        b"\n",
        b"\r\n",
        b"   \n",
        b"{",
        b"[[[",
        b'"',
        b"\xff\xfe\n",
        b"[" * (MAX_NESTING + 1) + b"]" * (MAX_NESTING + 1) + b"\n",
        b"[" * 100_000 + b"\n",
        b'{"jsonrpc":"2.0","method":"session/update","params":' + b"9" * 5000 + b"}\n",
        b'{"jsonrpc":"2.0","id":"\\ud800","method":"_vendor/poke"}\n',
        b'{"jsonrpc":"2.0","id":true,"result":1}\n',
        b'{"jsonrpc":"2.0","id":0.0,"result":1}\n',
        b'[{"jsonrpc":"2.0","method":"x"},7,null]\n',
        b"NaN\n",
        b'{"a":NaN,"b":-Infinity}\n',
    ]
)
garbage_pieces = st.lists(
    st.binary(max_size=40)
    | _garbage_json.map(json_line)
    | _rpc_shaped.map(json_line)
    | _updates.map(json_line)
    | _nasty_lines,
    max_size=10,
)
cut_points = st.lists(st.integers(min_value=0, max_value=1 << 20), max_size=16)


def cut(blob: bytes, points: list[int]) -> list[bytes]:
    marks = sorted({p % (len(blob) + 1) for p in points} | {0, len(blob)})
    return [blob[a:b] for a, b in itertools.pairwise(marks) if b > a]


@settings(max_examples=examples(300))
@given(st.lists(st.binary(max_size=30) | st.sampled_from([b"\n", b"\n\n", b"\r\n"]), max_size=12), cut_points)
def test_framing_does_not_depend_on_where_the_stream_is_cut(pieces: list[bytes], points: list[int]) -> None:
    blob = b"".join(pieces)
    framer = LineFramer()
    lines = [line for chunk in cut(blob, points) for line in framer.feed(chunk)]
    *whole, last = blob.split(b"\n")
    assert lines == whole
    assert framer.end() == (last if last.strip() else None)


@settings(max_examples=examples(300))
@given(st.binary(max_size=60) | json_values.map(json_line) | garbage_pieces.map(b"".join))
def test_decoding_any_line_returns_or_raises_an_ordinary_error(line: bytes) -> None:
    # The reader logs and skips what raises an Exception; anything else (a BaseException) would escape.
    with within(5), contextlib.suppress(Exception):
        decode_line(line)


async def _agent_behind(chunks: list[bytes], stdin: ByteReceiveStream, stdout: ByteSendStream) -> None:
    """Reads our ``test/ping``, sends the garbage chunks, asks us ``test/ask`` and waits for the answer,
    then sends the marker and the ping's answer, and exits once stdin ends."""
    buffer = b""
    ping_id = None
    while ping_id is None:
        buffer += await stdin.receive()
        for line in buffer.split(b"\n")[:-1]:
            message = json.loads(line)
            if message.get("method") == "test/ping":
                ping_id = message["id"]
    for chunk in chunks:
        await stdout.send(chunk)
    await stdout.send(b"\n" + json_line({"jsonrpc": "2.0", "id": ASK_ID, "method": "test/ask", "params": {}}))
    answered = None
    while answered is None:
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            message = json.loads(line)
            if message.get("id") == ASK_ID and "method" not in message:
                answered = message
        if answered is None:
            buffer += await stdin.receive()
    marker = {"jsonrpc": "2.0", "method": "test/marker", "params": {"token": TOKEN, "echo": answered}}
    await stdout.send(
        json_line(marker) + json_line({"jsonrpc": "2.0", "id": ping_id, "result": {"pong": TOKEN}})
    )
    try:
        while True:
            await stdin.receive()
    except (anyio.EndOfStream, anyio.ClosedResourceError):
        return


async def _exchange(chunks: list[bytes]) -> dict[str, Any]:
    seen: dict[str, Any] = {"markers": [], "updates": 0, "closed": []}

    async def ask(_params: Any) -> Any:
        return {"ok": True}

    def on_update(params: Any) -> None:
        if isinstance(params, dict) and isinstance(params.get("update"), dict):
            parse_update(params["update"])  # a handler that raised would be logged at ERROR
        seen["updates"] += 1

    transport = InProcessTransport(lambda i, o: _agent_behind(chunks, i, o), name="garbage")
    connection = AgentConnection.open(
        transport,
        request_handlers={"test/ask": ask},
        notification_handlers={"test/marker": seen["markers"].append, "session/update": on_update},
    )
    connection.on_closed(seen["closed"].append)
    with anyio.fail_after(10):
        seen["pong"] = await connection.rpc.request("test/ping", {})
        seen["open_after"] = connection.is_open
        connection.rpc.close("test done")  # ends our side: the agent sees EOF and returns
        await transport.aclose()
    return seen


class Errors(logging.Handler):
    """ERROR records under ``silo_nb`` (a handler's exception, a failed answer) while it is installed."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def __enter__(self) -> Errors:
        logging.getLogger("silo_nb").addHandler(self)
        return self

    def __exit__(self, *_exc: object) -> None:
        logging.getLogger("silo_nb").removeHandler(self)


@settings(max_examples=examples(250))
@given(garbage_pieces, cut_points)
def test_the_connection_survives_any_bytes_cut_anywhere(pieces: list[bytes], points: list[int]) -> None:
    blob = b"".join(pieces)
    with within(20), Errors() as errors:
        seen = asyncio.run(_exchange(cut(blob, points)))
    assert seen["pong"] == {"pong": TOKEN}
    assert seen["open_after"] is True
    assert [m["token"] for m in seen["markers"]] == [TOKEN]
    assert seen["markers"][0]["echo"]["result"] == {"ok": True}  # our writer still answered the agent
    assert not errors.records, [r.getMessage() for r in errors.records]
