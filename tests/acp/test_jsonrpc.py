"""In-process tests of ``JsonRpcConnection``: the test plays the agent over two in-memory byte pipes.

The "agent" writes raw bytes (in whatever chunking the test wants: ``BytePipe`` keeps write boundaries)
and reads what the client wrote, line by line, so framing, ordering and error shapes are checked on the
wire itself. The same connection over a whole transport is in ``test_transport.py`` (in-process agent
functions) and ``test_subprocess.py`` (real processes).
"""

from __future__ import annotations

import inspect
import json
import random
from typing import Any

import anyio
import pytest

from silo_nb.acp.jsonrpc import (
    METHOD_NOT_FOUND,
    AcpConnectionClosed,
    AcpRpcError,
)
from tests.support.jsonrpc import (
    RECV_TIMEOUT,
    Message,
    connected,
    encode,
    notification,
)

# -- notifications: order and framing ----------------------------------------------------------------


def _split_random(data: bytes, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    chunks: list[bytes] = []
    position = 0
    while position < len(data):
        size = rng.randint(1, 300)
        chunks.append(data[position : position + size])
        position += size
    return chunks


def _split_fixed(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


SPLITS = {
    "one_line_per_write": None,
    "everything_in_one_chunk": lambda data: [data],
    "random_splits": lambda data: _split_random(data, 1234),
    "tiny_chunks": lambda data: _split_fixed(data, 29),
    "64k_chunks": lambda data: _split_fixed(data, 1 << 16),
}


@pytest.mark.parametrize("split", list(SPLITS))
async def test_thousand_notifications_arrive_in_exact_order(split: str) -> None:
    count = 1000
    seen: list[Any] = []
    all_seen = anyio.Event()

    def on_update(params: Any) -> None:
        seen.append(params)
        if len(seen) == count:
            all_seen.set()

    updates = [
        {
            "sessionId": "s1",
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": f"chunk {i} é—🙂"},
                "seq": i,
            },
        }
        for i in range(count)
    ]
    lines = [encode(notification("session/update", params)) for params in updates]
    async with connected(notification_handlers={"session/update": on_update}) as h:
        splitter = SPLITS[split]
        if splitter is None:
            await h.agent.write_chunks(lines)
        else:
            await h.agent.write_chunks(splitter(b"".join(lines)))
        with anyio.fail_after(RECV_TIMEOUT):
            await all_seen.wait()
    assert [p["update"]["seq"] for p in seen] == list(range(count))
    assert seen == updates


async def test_unterminated_last_line_is_handled_at_end_of_stream() -> None:
    seen: list[Any] = []
    async with connected(notification_handlers={"n": seen.append}) as h:
        await h.agent.write(encode(notification("n", 1)) + json.dumps(notification("n", 2)).encode())
        h.agent.end()
        await h.wait_run_done()
    assert seen == [1, 2]


# -- client → agent requests ------------------------------------------------------------------------


async def test_request_response_round_trip() -> None:
    async with connected() as h:
        first = h.conn.start_request("session/new", {"cwd": "/tmp/x", "mcpServers": []})
        second = h.conn.start_request("session/list")
        sent_first, sent_second = await h.agent.recv(), await h.agent.recv()
        assert sent_first["jsonrpc"] == "2.0"
        assert sent_first["method"] == "session/new"
        assert sent_first["params"] == {"cwd": "/tmp/x", "mcpServers": []}
        assert isinstance(sent_first["id"], int)
        assert sent_second["method"] == "session/list"
        assert "params" not in sent_second
        assert sent_first["id"] != sent_second["id"]
        # Answered out of order: each waiter still gets its own result.
        await h.agent.send({"jsonrpc": "2.0", "id": sent_second["id"], "result": {"sessions": []}})
        await h.agent.send({"jsonrpc": "2.0", "id": sent_first["id"], "result": {"sessionId": "abc"}})
        with anyio.fail_after(RECV_TIMEOUT):
            assert await first.wait() == {"sessionId": "abc"}
            assert await second.wait() == {"sessions": []}


async def test_request_helper_returns_result() -> None:
    async with connected() as h:
        result: list[Any] = []

        async def call() -> None:
            result.append(await h.conn.request("initialize", {"protocolVersion": 1}))

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            sent = await h.agent.recv()
            await h.agent.send({"jsonrpc": "2.0", "id": sent["id"], "result": {"protocolVersion": 1}})
        assert result == [{"protocolVersion": 1}]


@pytest.mark.parametrize(
    ("error", "expected_message"),
    [
        pytest.param(
            {"code": -32603, "message": "Internal error", "data": "Session not found"},
            "Internal error: Session not found",
            id="string-data",
        ),
        pytest.param(
            {"code": -32603, "message": "Internal error", "data": {"details": "Session not found"}},
            "Internal error: Session not found",
            id="dict-data-details",
        ),
        pytest.param(
            {"code": -32000, "message": "Authentication required"},
            "Authentication required",
            id="no-data",
        ),
        pytest.param(
            {"code": -32602, "message": "Invalid params", "data": {"details": "Invalid params"}},
            "Invalid params",
            id="detail-repeats-message",
        ),
        pytest.param({"code": -32099, "message": ""}, "error -32099", id="empty-message"),
    ],
)
async def test_error_response_raises_acp_rpc_error(error: Message, expected_message: str) -> None:
    async with connected() as h:
        call = h.conn.start_request("session/load", {"sessionId": "gone"})
        sent = await h.agent.recv()
        await h.agent.send({"jsonrpc": "2.0", "id": sent["id"], "error": error})
        with anyio.fail_after(RECV_TIMEOUT), pytest.raises(AcpRpcError) as caught:
            await call.wait()
    assert caught.value.code == error["code"]
    assert caught.value.message == error["message"]
    assert caught.value.data == error.get("data")
    assert caught.value.agent_message() == expected_message


async def test_response_for_unknown_id_is_ignored() -> None:
    seen: list[Any] = []
    async with connected(notification_handlers={"n": seen.append}) as h:
        call = h.conn.start_request("x")
        sent = await h.agent.recv()
        await h.agent.send({"jsonrpc": "2.0", "id": sent["id"] + 100, "result": "wrong"})
        await h.agent.send({"jsonrpc": "2.0", "id": str(sent["id"]), "result": "wrong type"})
        await h.agent.send({"jsonrpc": "2.0", "id": sent["id"], "result": "right"})
        with anyio.fail_after(RECV_TIMEOUT):
            assert await call.wait() == "right"


# -- agent → client requests and notifications ------------------------------------------------------


async def test_unknown_request_gets_method_not_found_with_method_in_data() -> None:
    async with connected() as h:
        await h.agent.send({"jsonrpc": "2.0", "id": 7, "method": "terminal/create", "params": {}})
        reply = await h.agent.recv()
    assert reply["id"] == 7
    assert reply["jsonrpc"] == "2.0"
    assert "result" not in reply
    assert reply["error"]["code"] == METHOD_NOT_FOUND == -32601
    assert reply["error"]["data"] == {"method": "terminal/create"}
    assert "terminal/create" in reply["error"]["message"]


async def test_unknown_notification_is_ignored_and_never_answered() -> None:
    seen: list[Any] = []
    async with connected(notification_handlers={"known": seen.append}) as h:
        await h.agent.send(notification("_vendor/unknown", {"x": 1}))
        await h.agent.send({"jsonrpc": "2.0", "method": "also/unknown"})
        await h.agent.send(notification("known", "after"))
        # Writes are ordered: if anything had been written for the notifications, it would come first.
        await h.agent.send({"jsonrpc": "2.0", "id": "probe", "method": "no/such/method"})
        reply = await h.agent.recv()
    assert reply["id"] == "probe"
    assert reply["error"]["code"] == METHOD_NOT_FOUND
    assert seen == ["after"]


async def test_failing_notification_handler_does_not_stop_the_reader() -> None:
    seen: list[Any] = []
    done = anyio.Event()

    def handler(params: Any) -> None:
        if params == "boom":
            raise RuntimeError("listener bug")
        seen.append(params)
        if params == "last":
            done.set()

    async with connected(notification_handlers={"n": handler}) as h:
        for params in ("first", "boom", "last"):
            await h.agent.send(notification("n", params))
        with anyio.fail_after(RECV_TIMEOUT):
            await done.wait()
    assert seen == ["first", "last"]


@pytest.mark.parametrize("request_id", ["req-1", "7", 7, 0, -3, 2**40, None], ids=repr)
async def test_handler_result_is_sent_back_with_the_same_id(request_id: Any) -> None:
    async def echo(params: Any) -> Any:
        return {"echo": params}

    async with connected(request_handlers={"fs/read_text_file": echo}) as h:
        await h.agent.send(
            {"jsonrpc": "2.0", "id": request_id, "method": "fs/read_text_file", "params": {"path": "/a"}}
        )
        reply = await h.agent.recv()
    assert reply == {"jsonrpc": "2.0", "id": request_id, "result": {"echo": {"path": "/a"}}}
    assert type(reply["id"]) is type(request_id)


async def test_handler_raising_acp_rpc_error_sends_that_error() -> None:
    async def missing(params: Any) -> Any:
        raise AcpRpcError(-32002, "Resource not found", {"uri": params["path"]})

    async with connected(request_handlers={"fs/read_text_file": missing}) as h:
        await h.agent.send(
            {"jsonrpc": "2.0", "id": "r1", "method": "fs/read_text_file", "params": {"path": "/x"}}
        )
        reply = await h.agent.recv()
    assert reply == {
        "jsonrpc": "2.0",
        "id": "r1",
        "error": {"code": -32002, "message": "Resource not found", "data": {"uri": "/x"}},
    }


async def test_handler_raising_other_exception_sends_internal_error() -> None:
    async def broken(params: Any) -> Any:
        raise KeyError("oops")

    async with connected(request_handlers={"m": broken}) as h:
        await h.agent.send({"jsonrpc": "2.0", "id": 3, "method": "m"})
        reply = await h.agent.recv()
    assert reply["id"] == 3
    assert reply["error"]["code"] == -32603
    assert "result" not in reply


async def test_slow_request_handler_does_not_stall_notifications() -> None:
    release = anyio.Event()

    async def permission(params: Any) -> Any:
        await release.wait()
        return {"outcome": {"outcome": "selected", "optionId": "allow"}}

    def on_update(params: Any) -> None:
        release.set()

    async with connected(
        request_handlers={"session/request_permission": permission},
        notification_handlers={"session/update": on_update},
    ) as h:
        await h.agent.send({"jsonrpc": "2.0", "id": 1, "method": "session/request_permission", "params": {}})
        # The handler is blocked until this notification is read: only possible if the reader goes on.
        await h.agent.send(notification("session/update", {}))
        reply = await h.agent.recv()
    assert reply["id"] == 1
    assert reply["result"]["outcome"]["optionId"] == "allow"


# -- robustness: junk, batches, size limits ---------------------------------------------------------


async def test_non_json_lines_are_skipped_and_later_lines_work() -> None:
    seen: list[Any] = []
    async with connected(notification_handlers={"n": seen.append}) as h:
        await h.agent.write(b"this is not json\n")
        await h.agent.write(b'{"jsonrpc":"2.0","method":"n","params":\n')  # torn
        await h.agent.write(b"\xff\xfe\x00 not utf-8\n")
        await h.agent.write(b"\n   \n")
        await h.agent.write(b"42\n")
        await h.agent.send(notification("n", "survived"))
        await h.agent.send({"jsonrpc": "2.0", "id": 1, "method": "nope"})
        reply = await h.agent.recv()
    assert reply["id"] == 1
    assert seen == ["survived"]


async def test_json_array_line_is_dispatched_element_wise() -> None:
    seen: list[Any] = []

    async def echo(params: Any) -> Any:
        return params

    async with connected(notification_handlers={"n": seen.append}, request_handlers={"echo": echo}) as h:
        batch = [
            notification("n", 1),
            {"jsonrpc": "2.0", "id": "b1", "method": "echo", "params": "hi"},
            "not a message",
            notification("n", 2),
            {"jsonrpc": "2.0", "id": "b2", "method": "unknown"},
        ]
        await h.agent.send(batch)
        replies = {r["id"]: r for r in [await h.agent.recv(), await h.agent.recv()]}
    assert seen == [1, 2]
    assert replies["b1"]["result"] == "hi"
    assert replies["b2"]["error"]["code"] == METHOD_NOT_FOUND


async def test_one_mebibyte_line_round_trips_intact() -> None:
    blob = ("0123456789abcdef" * 65536)[: 1 << 20]
    blob = 'é🙂\n"\\' + blob + "\u2028end"
    seen: list[Any] = []

    async def echo(params: Any) -> Any:
        return params

    async with connected(notification_handlers={"n": seen.append}, request_handlers={"echo": echo}) as h:
        request = {"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"blob": blob}}
        line = encode(request)
        assert len(line) > 1 << 20
        await h.agent.write_chunks(_split_fixed(line, 50_000))
        await h.agent.send(notification("n", {"blob": blob}))
        reply_line = await h.agent.read_line()
        with anyio.fail_after(10):
            while not seen:  # the reader yields between chunks: let it reach the notification's end
                await anyio.sleep(0.01)
    reply = json.loads(reply_line)
    assert reply["id"] == 1
    assert reply["result"]["blob"] == blob
    assert seen == [{"blob": blob}]


async def test_line_longer_than_limit_is_dropped_and_next_line_works() -> None:
    seen: list[Any] = []
    async with connected(max_line_bytes=1000, notification_handlers={"n": seen.append}) as h:
        long_line = encode(notification("n", "x" * 3000))
        good = encode(notification("n", "small"))
        # The long line arrives in pieces; the good line shares the chunk with the long line's tail.
        chunks = _split_fixed(long_line, 400)
        chunks[-1] = chunks[-1] + good
        await h.agent.write_chunks(chunks)
        await h.agent.send({"jsonrpc": "2.0", "id": 1, "method": "probe"})
        await h.agent.recv()
    assert seen == ["small"]


async def test_line_longer_than_limit_in_one_chunk_is_dropped() -> None:
    seen: list[Any] = []
    async with connected(max_line_bytes=1000, notification_handlers={"n": seen.append}) as h:
        await h.agent.write(encode(notification("n", "x" * 3000)) + encode(notification("n", "small")))
        await h.agent.send({"jsonrpc": "2.0", "id": 1, "method": "probe"})
        await h.agent.recv()
    assert seen == ["small"]


# -- cancellation ------------------------------------------------------------------------------------


@pytest.mark.parametrize("request_id", ["perm-1", 5], ids=repr)
async def test_cancel_request_from_agent_cancels_handler_and_answers_32800(request_id: Any) -> None:
    started = anyio.Event()
    cancelled: list[bool] = []

    async def permission(params: Any) -> Any:
        started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.append(True)
            raise

    async with connected(request_handlers={"session/request_permission": permission}) as h:
        await h.agent.send(
            {"jsonrpc": "2.0", "id": request_id, "method": "session/request_permission", "params": {}}
        )
        with anyio.fail_after(RECV_TIMEOUT):
            await started.wait()
        await h.agent.send(notification("$/cancel_request", {"requestId": request_id}))
        reply = await h.agent.recv()
    assert reply["id"] == request_id
    assert reply["error"]["code"] == -32800
    assert "result" not in reply
    assert cancelled == [True]


async def test_cancelling_a_waiter_sends_cancel_request_with_its_id() -> None:
    async with connected() as h:
        call = h.conn.start_request("session/prompt", {"sessionId": "s"})
        sent = await h.agent.recv()
        with anyio.CancelScope() as scope:
            scope.cancel()
            await call.wait()
        assert scope.cancelled_caught
        cancel = await h.agent.recv()
        assert cancel == {
            "jsonrpc": "2.0",
            "method": "$/cancel_request",
            "params": {"requestId": sent["id"]},
        }
        assert "id" not in cancel
        # A late answer to the abandoned request is ignored; the connection carries on.
        await h.agent.send({"jsonrpc": "2.0", "id": sent["id"], "result": {"stopReason": "cancelled"}})
        follow = h.conn.start_request("next")
        sent_follow = await h.agent.recv()
        await h.agent.send({"jsonrpc": "2.0", "id": sent_follow["id"], "result": "ok"})
        with anyio.fail_after(RECV_TIMEOUT):
            assert await follow.wait() == "ok"


async def test_wait_timeout_sends_cancel_request() -> None:
    async with connected() as h:
        call = h.conn.start_request("slow")
        sent = await h.agent.recv()
        with anyio.move_on_after(0.01):
            await call.wait()
        cancel = await h.agent.recv()
    assert cancel["method"] == "$/cancel_request"
    assert cancel["params"] == {"requestId": sent["id"]}


# -- closing -----------------------------------------------------------------------------------------


async def test_end_of_stream_fails_pending_requests_with_describe_close_message() -> None:
    async def describe() -> str:
        return "agent exited with code 1: boom"

    async with connected(describe_close=describe) as h:
        first = h.conn.start_request("session/prompt")
        second = h.conn.start_request("session/new")
        await h.agent.recv()
        await h.agent.recv()
        h.agent.end()
        for call in (first, second):
            with anyio.fail_after(RECV_TIMEOUT), pytest.raises(AcpConnectionClosed) as caught:
                await call.wait()
            assert str(caught.value) == "agent exited with code 1: boom"
        await h.wait_run_done()
        assert h.conn.is_closed
        assert h.conn.close_message == "agent exited with code 1: boom"
        with pytest.raises(AcpConnectionClosed, match="code 1: boom"):
            h.conn.start_request("late")
        assert h.conn.notify("late") is None  # dropped, not raised


async def test_end_of_stream_without_describer_uses_default_message() -> None:
    async with connected() as h:
        call = h.conn.start_request("x")
        await h.agent.recv()
        h.agent.end()
        with (
            anyio.fail_after(RECV_TIMEOUT),
            pytest.raises(AcpConnectionClosed, match="ACP connection closed"),
        ):
            await call.wait()
        await h.wait_run_done()


async def test_close_fails_pending_requests_with_disposed_message() -> None:
    async with connected() as h:
        call = h.conn.start_request("session/prompt")
        await h.agent.recv()
        h.conn.close()
        with anyio.fail_after(RECV_TIMEOUT), pytest.raises(AcpConnectionClosed) as caught:
            await call.wait()
        assert str(caught.value) == "ACP client disposed"
        await h.wait_run_done()
        assert h.conn.close_message == "ACP client disposed"
        # The first reason sticks.
        h.conn.close("something else")
        assert h.conn.close_message == "ACP client disposed"


# -- writing -----------------------------------------------------------------------------------------


async def test_notify_is_synchronous_and_writes_one_escaped_json_object_per_line() -> None:
    async with connected() as h:
        assert not inspect.iscoroutinefunction(h.conn.notify)
        params = {"sessionId": "s", "text": "line one\nline two\r\n\u2028", "emoji": "🙂"}
        assert h.conn.notify("session/cancel", params) is None
        assert h.conn.notify("session/cancel") is None
        h.conn.start_request("with/newline", {"a": "x\ny"})
        first_line = await h.agent.read_line()
        second = await h.agent.read_line()
        third = await h.agent.read_line()
    assert b"\n" not in first_line and b"\r" not in first_line
    assert b"\\n" in first_line
    assert json.loads(first_line) == {"jsonrpc": "2.0", "method": "session/cancel", "params": params}
    assert json.loads(second) == {"jsonrpc": "2.0", "method": "session/cancel"}
    assert json.loads(third)["params"] == {"a": "x\ny"}
    assert "🙂".encode() in first_line  # UTF-8, not \\u escapes
