"""The vendor agents a user would bring, pinned in ``tests/node`` (``.ci/setup`` runs ``npm ci``), offline.

- codex-acp 0.16.0, gemini-cli 0.61.0 (``--acp``), claude-agent-acp 0.49.0; each with an empty HOME and
  an environment scrubbed to PATH (no keys, no stored logins, no ``IS_SANDBOX``), no network.
- What is checked: ``initialize`` data (``agents.sessions.doctor``); the sign-in error and its advice
  (codex and gemini with no key; claude at the prompt); ``authenticate`` with a dummy key then a session
  (codex); sessions, config options (native or synthesized) and their round trips, an agent's refusal
  in its own words; commands; a local slash command as a whole turn; a Stop the agent ignores (gemini)
  ending the turn, then a second Stop ending the agent; no process of theirs left after ``dispose()``,
  ``aclose()`` and a SIGKILL of the owning process (found by their unique HOME in ``/proc``).
- Skipped only where Node is missing; each test is bounded.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import silo_nb
from silo_nb.acp.client import CLOSING, background_closes
from silo_nb.sessions.session.stop_control import KILLED, NOT_STOPPED
from tests.conftest import ROOT, Workspace

BIN = ROOT / "tests" / "node" / "node_modules" / ".bin"
AGENTS = {
    "codex": ("codex-acp", []),
    "gemini": ("gemini", ["--acp"]),
    "claude": ("claude-agent-acp", []),
}

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="Node is not installed")


def profile(name: str, **extra: Any) -> dict[str, Any]:
    binary, args = AGENTS[name]
    path = BIN / binary
    if not path.exists():
        pytest.fail(f"{path} is missing — run `bash .ci/setup` (npm ci in tests/node)")
    return {
        "id": extra.pop("id", name),
        "label": name.capitalize(),
        "command": str(path),
        "args": args,
        **extra,
    }


@pytest.fixture
async def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Path]:
    """An empty HOME and an environment scrubbed to PATH; afterwards, no process of the agents is left."""
    folder = tmp_path / "home"
    folder.mkdir()
    for key in list(os.environ):
        if key != "PATH":
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(folder))
    yield folder
    await background_closes()  # a failed connect's or doctor's agent ends in the background
    leftovers = processes_with_home(folder)
    for pid in leftovers:
        os.kill(pid, signal.SIGKILL)
    assert leftovers == [], "agent processes were left behind"


def processes_with_home(home: Path, wait: float = 8.0) -> list[int]:
    """Processes (not zombies) whose environment has ``HOME=home``, after up to ``wait`` s for them to go."""
    needle = f"HOME={home}".encode() + b"\0"
    deadline = time.monotonic() + wait
    while True:
        found = []
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/environ", "rb") as f:
                    environ = f.read() + b"\0"
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    state = f.read().rsplit(b")", 1)[1].split()[0]
            except OSError:
                continue
            if needle in environ and state != b"Z":
                found.append(int(entry.name))
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


async def test_initialize_data_and_sign_in_methods(workspace: Workspace, home: Path) -> None:
    workspace.add_profiles(profile("codex"), profile("gemini"), profile("claude"))
    svc = workspace.service()
    with anyio.fail_after(90):
        codex, gemini, claude = [await svc.sessions.doctor(name) for name in ("codex", "gemini", "claude")]
    assert (codex.agent_title, codex.version) == ("Codex", "0.16.0")
    assert [(m.id, m.type, m.variables) for m in codex.auth_methods] == [
        ("chatgpt", "agent", ()),
        ("codex-api-key", "env_var", ("CODEX_API_KEY",)),
        ("openai-api-key", "env_var", ("OPENAI_API_KEY",)),
    ]
    assert codex.missing["codex-api-key"] == "set CODEX_API_KEY in the profile's env"
    assert codex.capabilities["resume"] and codex.capabilities["logout"]
    assert (gemini.agent_title, gemini.version) == ("Gemini CLI", "0.61.0")
    assert [m.id for m in gemini.auth_methods] == ["oauth-personal", "gemini-api-key", "vertex-ai", "gateway"]
    assert gemini.missing["gemini-api-key"] == "set GEMINI_API_KEY in the profile's env"
    assert (claude.agent_title, claude.version) == ("Claude Agent", "0.49.0")
    # silo_nb advertises auth.terminal, so claude lists its terminal logins, with the command to run.
    (login, console) = claude.auth_methods
    assert login.type == "terminal" and login.command[-4:] == ("--cli", "auth", "login", "--claudeai")
    assert console.id == "console-login"
    assert "claude-agent-acp --cli auth login --claudeai` in a terminal" in "\n".join(claude.lines())


async def test_codex_without_a_key_says_every_way_to_sign_in(workspace: Workspace, home: Path) -> None:
    workspace.add_profiles(profile("codex"))
    svc = workspace.service()
    with anyio.fail_after(60), pytest.raises(silo_nb.AgentSignInError) as info:
        await svc.sessions.connect("codex")
    # Reported while codex (which ignores stdin EOF) is still being shut down, in the background.
    assert len(CLOSING) > 0
    assert str(info.value) == (
        "Codex could not start a session (it may need you to sign in first): Authentication required — "
        "sign in: set CODEX_API_KEY "
        "(codex-api-key) or OPENAI_API_KEY (openai-api-key) in the profile's env; or run %silo login codex "
        "chatgpt (Login with ChatGPT)."
    )
    assert "WARNING" not in str(info.value)  # codex's unrelated stderr warning is not the cause
    await background_closes()


async def test_codex_with_a_key_in_the_profile_authenticates_then_works(
    workspace: Workspace, home: Path
) -> None:
    workspace.add_profiles(profile("codex", env={"CODEX_API_KEY": "dummy-offline"}))
    svc = workspace.service()
    with anyio.fail_after(90):
        handle = await svc.sessions.connect("codex")
        try:
            assert handle.is_live and handle.session_id
            assert [o.id for o in handle.config_options] == ["mode", "model", "reasoning_effort"]
            await handle.set_config_option("mode", "read-only")
            assert next(o for o in handle.config_options if o.id == "mode").current_value == "read-only"
            with pytest.raises(silo_nb.AgentSessionError) as refused:
                await handle.set_config_option("model", "no-such-model")
            assert "no-such-model" in str(refused.value) or "Invalid" in str(refused.value)
            await wait_for(lambda: len(handle.commands) > 0)
            assert {"review", "init", "compact"} <= {c.name for c in handle.commands}
        finally:
            await handle.aclose()


async def test_gemini_sign_in_advice_then_session_and_legacy_options(
    workspace: Workspace, home: Path
) -> None:
    workspace.add_profiles(
        profile("gemini"), profile("gemini", id="gemini-key", env={"GEMINI_API_KEY": "dummy"})
    )
    svc = workspace.service()
    with anyio.fail_after(60), pytest.raises(silo_nb.AgentSignInError) as info:
        await svc.sessions.connect("gemini")
    message = str(info.value)
    assert message.startswith(
        "Gemini could not start a session (it may need you to sign in first): Gemini API key is missing "
        "or not configured. —"
    )
    assert "set GEMINI_API_KEY (gemini-api-key) in the profile's env" in message
    assert "%silo login gemini oauth-personal (Log in with Google)" in message
    with anyio.fail_after(90):
        handle = await svc.sessions.connect("gemini-key")
        try:
            ids = [o.id for o in handle.config_options]
            assert "mode" in ids and "model" in ids  # synthesized from legacy modes/models
            await handle.set_config_option("mode", "plan")
            assert next(o for o in handle.config_options if o.id == "mode").current_value == "plan"
            await wait_for(lambda: any(c.name == "about" for c in handle.commands))
            result = await handle.prompt([{"type": "text", "text": "/about"}])
            assert result.stop_reason == "end_turn"
            journal = await svc.sessions.read_journal(handle.session_id)
            assert "0.61.0" in "".join(u.text or "" for u in journal if u.kind == "agent_message_chunk")
            assert journal[-1].kind == "turn_end" and journal[-1].raw["outcome"] == "finished"
        finally:
            handle.dispose()


async def test_gemini_ignores_stop_then_a_second_stop_ends_it(workspace: Workspace, home: Path) -> None:
    workspace.add_profiles(profile("gemini", env={"GEMINI_API_KEY": "dummy"}, cancel_timeout=1.0))
    svc = workspace.service()
    with anyio.fail_after(120):
        handle = await svc.sessions.connect("gemini")
        try:
            results: list[silo_nb.AgentPromptResult] = []

            async def turn() -> None:
                results.append(await handle.prompt([{"type": "text", "text": "hello"}]))

            async with anyio.create_task_group() as tg:
                tg.start_soon(turn)
                await anyio.sleep(1.0)
                handle.cancel()
            # Offline, gemini keeps retrying the model call: the turn ends at the bound, and says so.
            assert results[0].stop_reason == "cancelled" and handle.stop_overdue
            journal = await svc.sessions.read_journal(handle.session_id)
            end = journal[-1].raw
            assert {key: end.get(key) for key in ("synthesized", "outcome", "stopReason", "error")} == {
                "synthesized": True,
                "outcome": "cancelled",
                "stopReason": "cancelled",
                "error": NOT_STOPPED,
            }
            handle.cancel()  # the second Stop ends the agent's processes and closes the session
            await wait_for(lambda: not handle.is_live)
            with pytest.raises(silo_nb.AgentSessionError, match="no longer connected"):
                await handle.prompt([{"type": "text", "text": "again"}])
            assert KILLED in handle.core.wiring.connection.rpc.close_message  # type: ignore[union-attr, operator]
            assert processes_with_home(home) == []
        finally:
            await handle.aclose()


async def test_claude_session_options_commands_turn_and_sign_in_at_the_prompt(
    workspace: Workspace, home: Path
) -> None:
    workspace.add_profiles(profile("claude"))
    svc = workspace.service()
    with anyio.fail_after(120):
        handle = await svc.sessions.connect("claude")
        try:
            assert [o.id for o in handle.config_options] == ["mode", "model", "effort"]
            await handle.set_config_option("mode", "plan")
            assert next(o for o in handle.config_options if o.id == "mode").current_value == "plan"
            with pytest.raises(silo_nb.AgentSessionError):
                await handle.set_config_option("mode", "no-such-mode")  # refused by silo_nb: not a choice
            await wait_for(lambda: any(c.name == "context" for c in handle.commands))
            result = await handle.prompt([{"type": "text", "text": "/context"}])
            assert result.stop_reason == "end_turn"
            with pytest.raises(silo_nb.AgentSignInError) as info:
                await handle.prompt([{"type": "text", "text": "hi"}])
            assert str(info.value).startswith(
                "The prompt turn failed: Authentication required — sign in: run `"
            )
            assert "--cli auth login --claudeai` in a terminal (Claude Subscription)" in str(info.value)
            journal = await svc.sessions.read_journal(handle.session_id)
            assert journal[-1].raw["signIn"] == ["claude-ai-login", "console-login"]
            assert journal[-1].raw["error"] == str(info.value)
        finally:
            await handle.aclose()


def test_sigkill_of_the_owning_process_leaves_no_agent_process(workspace: Workspace, home: Path) -> None:
    owners = []
    for name, extra in (("codex", {"env": {"CODEX_API_KEY": "dummy"}}), ("claude", {})):
        profiles = workspace.root / f"{name}.json"
        profiles.write_text(json.dumps({"profiles": [profile(name, **extra)]}))
        env = {**os.environ, "PYTHONPATH": str(ROOT), "SILO_NB_PROFILES": str(profiles)}
        owner = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "agents" / "vendor_owner.py"), str(workspace.folder), name],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        owners.append(owner)
        assert owner.stdout is not None
        line = owner.stdout.readline()
        assert line.startswith("ready "), f"{name}: the owner reported {line!r} (exit {owner.poll()})"
    assert processes_with_home(home, wait=0)  # their agents are running
    for owner in owners:
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
    assert processes_with_home(home) == []


async def wait_for(condition: Any, timeout: float = 30.0) -> None:
    with anyio.fail_after(timeout):
        while not condition():
            await anyio.sleep(0.05)
