"""The kernel tools' guard: a 0700 folder and a 0600 socket of this user, a per-session token on every
request, the peer's uid checked, no TCP listener, nothing served outside a running turn — and a relay
that dies takes nothing with it."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from silo_nb.kernel_tools import KernelNamespace, KernelToolServer
from silo_nb.kernel_tools.wire import TOKEN_ENV
from silo_nb.sessions.session.client_tool_calls import OUTSIDE_A_TURN
from tests.conftest import Workspace
from tests.kernel_tools.tool_session import client_for, tool_session

PROBE_USER = "silo-kt-probe"
# Run as another user: connect to the socket and send a request with the right token.
INTRUDER = """
import json, socket, sys
sock = socket.socket(socket.AF_UNIX)
try:
    sock.connect(sys.argv[1])
except OSError as exc:
    print(type(exc).__name__)
    raise SystemExit(0)
request = {"token": sys.argv[2], "id": 1, "tool": "list_variables", "arguments": {}}
try:
    sock.sendall(json.dumps(request).encode() + b"\\n")
    line = sock.makefile().readline().strip()
except OSError:  # closed on us: a broken pipe, or a reset when the request was still unread
    line = ""
print("answer:", line or "<closed>")
"""


def relay_pids(token: str) -> list[int]:
    """The processes whose environment holds this session's token (the relay an agent started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if f"{TOKEN_ENV}={token}".encode() in environ.split(b"\0"):
                found.append(int(entry.name))
    return found


def process_tree(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    tree, todo = {root}, [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            tree.add(child)
            todo.append(child)
    return tree


def tcp_listeners_of(pids: set[int]) -> list[str]:
    """``ss -ltnp`` lines of the listening TCP sockets these processes own."""
    lines = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout.splitlines()
    return [line for line in lines if any(f"pid={pid}," in line for pid in pids)]


@pytest.fixture
def other_user() -> Iterator[str | None]:
    """A local user that is not us (made for the test, as root can); None when we cannot make one."""
    if os.geteuid() != 0:
        yield None
        return
    subprocess.run(["userdel", PROBE_USER], capture_output=True, check=False)
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", PROBE_USER], check=True)
    try:
        yield PROBE_USER
    finally:
        subprocess.run(["userdel", PROBE_USER], capture_output=True, check=False)


async def test_the_socket_is_this_user_s_alone(workspace: Workspace, other_user: str | None) -> None:
    namespace = {"secret": 42}
    server = await KernelToolServer(KernelNamespace(namespace)).start()
    try:
        assert server.folder is not None and server.socket_path is not None
        folder, sock = os.stat(server.folder), os.stat(server.socket_path)
        assert stat.S_IMODE(folder.st_mode) == 0o700 and folder.st_uid == os.getuid()
        assert stat.S_ISSOCK(sock.st_mode) and stat.S_IMODE(sock.st_mode) == 0o600
        assert len(server.token) >= 40 and server.token not in server.socket_path
        if other_user is None:
            return  # not root: the mode bits above are the proof
        # A Python the other user may run (this venv's may sit in a folder only we can enter).
        python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
        probe = [python, "-I", "-c", INTRUDER, server.socket_path, server.token]

        def intrude() -> str:
            done = subprocess.run(
                probe, user=other_user, cwd="/", capture_output=True, text=True, check=False
            )
            return done.stdout + done.stderr

        assert (await asyncio.to_thread(intrude)).strip() == "PermissionError"  # even with the token
        # Opened up by mistake, the socket still refuses them: the peer's uid is checked.
        os.chmod(server.folder, 0o755)
        os.chmod(server.socket_path, 0o666)
        assert (await asyncio.to_thread(intrude)).strip() == "answer: <closed>"
        assert server.refused == 1 and server.served == 0
    finally:
        await server.aclose()
    assert not os.path.exists(server.folder)


async def test_a_request_without_the_token_is_refused(workspace: Workspace) -> None:
    namespace = {"secret": 42}
    async with tool_session(workspace, namespace) as session:
        server = session.server
        assert server.socket_path is not None
        for token in (None, "guess", server.token[:-1]):
            reader, writer = await asyncio.open_unix_connection(server.socket_path)
            request = {"id": 7, "tool": "run_code", "arguments": {"code": "secret = 0"}}
            if token is not None:
                request["token"] = token
            writer.write(json.dumps(request).encode() + b"\n")
            answer = json.loads(await reader.readline())
            assert answer == {"id": None, "refused": "a request without this session's token"}
            assert await reader.readline() == b""  # and the connection is closed
            writer.close()
        assert server.refused == 3
        error, _, _ = await session.call("list_variables")  # the agent's relay, with the token, works
        assert not error
    assert namespace == {"secret": 42} and session.code_requests == []
    assert [line["tool"] for line in session.lines()] == ["list_variables"]


async def test_no_tcp_listener_and_nothing_served_outside_a_turn(workspace: Workspace) -> None:
    ours = process_tree(os.getpid())
    assert tcp_listeners_of(ours) == []
    namespace = {"count": 0}
    async with tool_session(workspace, namespace, turn=False) as session:
        ours = process_tree(os.getpid())
        assert relay_pids(session.server.token)[0] in ours  # the relay runs, under this test
        for tool, arguments in (("list_variables", {}), ("run_code", {"code": "count = 1"})):
            error, text, _ = await session.call(tool, **arguments)
            assert error and text == OUTSIDE_A_TURN
        assert tcp_listeners_of(ours) == []
    assert namespace == {"count": 0} and session.code_requests == []
    assert session.lines() == [] and session.lines("permission_request") == []


async def test_a_killed_relay_takes_nothing_with_it(workspace: Workspace) -> None:
    first_ns, second_ns = {"a": 1}, {"b": 2}
    async with tool_session(workspace, first_ns) as first, tool_session(workspace, second_ns) as second:
        await first.call("list_variables")
        for pid in relay_pids(first.server.token):
            os.kill(pid, signal.SIGKILL)
        error, text, _ = await second.call("inspect_variable", name="b")  # the other session goes on
        assert not error and "2" in text
        assert first.handle.is_live and first.handle.client_tool_calls.turn_running
        # The first session's kernel side still serves a relay started again (an agent restarting it).
        async with client_for(first.server) as client:
            result = await client.call_tool("inspect_variable", {"name": "a"})
        assert not result.is_error
    journal = await workspace.service().sessions.read_journal(first.handle.session_id)
    assert [u.raw["tool"] for u in journal if u.kind == "kernel_tool"] == [
        "list_variables",
        "inspect_variable",
    ]
