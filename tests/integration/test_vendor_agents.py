"""The seven vendor agents users run today, pinned in ``tests/node`` on Node 24 from PyPI (``.ci/setup``).

claude-agent-acp 0.101.0, codex-acp 2.6.0, gemini-cli 0.61.0, opencode 1.18.33, pi-acp 0.0.34 (+ pi 1.6.0),
qwen-code 0.24.4 and copilot 1.0.102, each with its own HOME (empty at first, kept for the run), an
environment scrubbed to PATH, dummy keys and no network. No test skips: a missing agent fails, saying
what to run. Most facts come from one tour of all of them, run concurrently (``vendor_tour.py``):

- ``doctor``: the version and the sign-in methods in each of today's shapes, with what is missing.
- A session: its config options, one set; commands announced; a prompt and a Stop — answered
  ``cancelled``, or ``end_turn`` (opencode: reported as cancelled, the agent's reason kept), or not at all
  (gemini: the turn ends at ``cancel_timeout``, a second Stop ends the agent); ``dispose``; nothing left
  in the agent's process group or with its HOME.
- Without keys: the sign-in error with its advice, at ``connect`` or at the prompt (claude).
- ``_auth/status_update`` (Claude, Codex) feeds ``doctor``'s "signed in" line; whether each takes a
  ``systemPrompt`` (``doctor``'s "system prompt" line).

Separately: pi's banner before the first prompt reaches ``on_update``, the journal and the panel; no
process of any agent outlives a SIGKILLed kernel (``vendor_owner.py``). MCP: ``test_vendor_mcp.py``.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from typing import Any

import anyio
import pytest

import silo_nb
from silo_nb.notebook.widgets.session_panel import SessionPanel
from silo_nb.sessions.session.stop_control import NOT_STOPPED
from tests.conftest import NODE_MODULES, ROOT, Workspace
from tests.integration.conftest import VendorHomes
from tests.integration.vendor_agents import (
    BIN,
    VENDORS,
    agent_environment,
    processes_with_home,
    profile,
)
from tests.integration.vendor_tour import Tour, run_tour

SESSIONS = [name for name, vendor in VENDORS.items() if vendor.session]
# (agentInfo.version, a command it announces, its own answers to a Stop 3 s into an offline turn: None
# when it did not answer within cancel_timeout). The answer depends on where the agent is in its turn:
# gemini ignores a Stop while it retries the model call; opencode has answered end_turn and cancelled.
EXPECTED: dict[str, tuple[str, str | None, set[str | None]]] = {
    "claude": ("0.101.0", "context", {"cancelled"}),
    "codex": ("2.6.0", "review", {"cancelled"}),
    "gemini": ("0.61.0", "about", {None, "cancelled"}),
    "opencode": ("1.18.33", "init", {"end_turn", "cancelled", None}),
    "pi": ("0.0.34", "compact", {"cancelled"}),
    "qwen": ("0.24.4", "init", {"cancelled"}),
    "copilot": ("1.0.102", None, set()),
}


@pytest.fixture(scope="module")
def tour(
    tmp_path_factory: pytest.TempPathFactory, vendor_homes: VendorHomes
) -> tuple[dict[str, Tour], list[logging.LogRecord]]:
    return run_tour(tmp_path_factory.mktemp("tour"), vendor_homes)


@pytest.mark.parametrize("name", SESSIONS)
def test_session_options_commands_stop_and_close(tour: tuple[dict[str, Tour], Any], name: str) -> None:
    seen = tour[0][name]
    assert seen.error is None, seen.error
    version, command, answers = EXPECTED[name]
    assert seen.doctor is not None and seen.doctor.version == version
    option_id, value = VENDORS[name].option or ("", "")
    assert option_id in seen.options and seen.option_after == value
    assert command in seen.commands
    # A Stop ends the turn as "cancelled", whatever the agent answered; its own answer stays in raw.
    assert seen.stop_reason == "cancelled"
    answer = seen.raw.get("stopReason")
    assert answer in answers
    assert seen.turn_end["outcome"] == "cancelled" and seen.turn_end["stopReason"] == "cancelled"
    assert seen.turn_end.get("agentStopReason") == (answer if answer != "cancelled" else None)
    if seen.overdue:  # no answer within cancel_timeout: the turn ended anyway; the second Stop ends it
        assert answer is None and seen.turn_end["error"] == NOT_STOPPED
        assert seen.live_after_second_stop is False
    else:
        assert answer is not None and "error" not in seen.turn_end
    assert seen.group_left == [] and seen.home_left == [], "agent processes were left behind"


def test_pi_sends_its_banner_and_usage_before_any_prompt(tour: tuple[dict[str, Tour], Any]) -> None:
    opening = tour[0]["pi"].opening
    assert opening[0] == ("agent_message_chunk", "pi v1.6.0\n---\n")
    assert "usage_update" in [kind for kind, _ in opening]


def test_doctor_reads_every_sign_in_shape(tour: tuple[dict[str, Tour], Any]) -> None:
    doctors = {name: seen.doctor for name, seen in tour[0].items()}
    assert all(d is not None and d.problem is None for d in doctors.values()), doctors
    shapes = {
        name: [(m.id, m.type, m.provider, m.variables, m.command) for m in d.auth_methods]  # type: ignore[union-attr]
        for name, d in doctors.items()
    }
    assert {name: d.version for name, d in doctors.items()} == {k: v[0] for k, v in EXPECTED.items()}  # type: ignore[union-attr]
    claude = str(BIN / "claude-agent-acp")
    assert shapes["claude"] == [  # type "terminal" + args: the agent's own command with the args appended
        ("claude-ai-login", "terminal", None, (), (claude, "--cli", "auth", "login", "--claudeai")),
        ("console-login", "terminal", None, (), (claude, "--cli", "auth", "login", "--console")),
    ]
    assert shapes["codex"] == [  # _meta["api-key"].provider: the provider's variable, then authenticate
        ("api-key", "agent", "openai", ("OPENAI_API_KEY",), ()),
        ("chat-gpt", "agent", None, (), ()),
        ("chat-gpt-device-code", "agent", None, (), ()),  # offered to a client with a terminal
    ]
    assert doctors["codex"].will_authenticate == "api-key"  # type: ignore[union-attr]
    assert shapes["gemini"][1] == ("gemini-api-key", "agent", "google", ("GEMINI_API_KEY",), ())
    assert shapes["opencode"] == [("opencode-login", "terminal", None, (), ("opencode", "auth", "login"))]
    assert shapes["pi"] == [
        ("pi_terminal_login", "terminal", None, (), (str(BIN / "pi-acp"), "--terminal-login"))
    ]
    qwen = (str(BIN / "qwen"), *VENDORS["qwen"].args, "--auth-type=openai")  # _meta.type "terminal"
    assert shapes["qwen"] == [("openai", "terminal", None, (), qwen)]
    ((_, kind, _, _, command),) = shapes["copilot"]  # _meta["terminal-auth"]: its own absolute command
    assert kind == "terminal" and command[1:] == ("login",) and command[0].endswith("/copilot")
    # Signed in or not, without a prompt: the _auth/status_update Claude and Codex push after initialize.
    said = {name: (d.signed_in, d.system_prompt) for name, d in doctors.items()}  # type: ignore[union-attr]
    assert said["claude"] == (
        "signed in: yes (Anthropic API key, ANTHROPIC_API_KEY)",
        "system prompt: none in the profile (the agent takes append, override); "
        "notebook guidance for kernel sessions: on",
    )
    assert said["codex"][0] == "signed in: no"  # its own login: none (connect signs in with the key)
    assert said["codex"][1].startswith("system prompt: none in the profile (the agent takes append);")
    assert said["opencode"] == (
        "signed in: not reported (the agent offers neither auth/status nor _auth/status_update)",
        "system prompt: not sent — OpenCode does not offer sessionCapabilities.systemPrompt",
    )
    lines = "\n".join(doctors["pi"].lines())  # type: ignore[union-attr]
    assert (
        f"sign in: run `{BIN / 'pi-acp'} --terminal-login` in a terminal (Launch pi in the terminal)" in lines
    )


ADVICE = {
    "claude": (
        "prompt",
        f"run `{BIN / 'claude-agent-acp'} --cli auth login --claudeai` in a terminal (Claude Subscription)",
    ),
    "codex": (
        "connect",
        "sign in: set OPENAI_API_KEY (api-key) in the profile's env; "
        "or run %silo login codex-nokey chat-gpt (ChatGPT); ",
    ),
    "gemini": (
        "connect",
        "set GEMINI_API_KEY (gemini-api-key) in the profile's env; "
        "or run %silo login gemini-nokey oauth-personal",
    ),
    "pi": ("connect", f"run `{BIN / 'pi-acp'} --terminal-login` in a terminal (Launch pi in the terminal)."),
    "qwen": ("connect", "--model qwen3-coder-plus --auth-type=openai` in a terminal (Use OpenAI API key)."),
    "copilot": ("connect", "/copilot login` in a terminal (Log in with Copilot CLI)."),
}


@pytest.mark.parametrize("name", sorted(ADVICE))
def test_without_a_key_the_sign_in_error_says_how(tour: tuple[dict[str, Tour], Any], name: str) -> None:
    seen = tour[0][name]
    where, advice = ADVICE[name]
    assert seen.sign_in is not None, seen.error
    assert (seen.sign_in_at, advice in seen.sign_in) == (where, True), seen.sign_in
    assert seen.sign_in_methods and "\n" not in seen.sign_in
    assert seen.home_left == []


def test_the_sign_in_push_is_read_quietly(tour: tuple[dict[str, Tour], Any]) -> None:
    seen, records = tour
    # Claude and Codex push _auth/status_update; the session keeps what they last said, nothing warns.
    assert seen["claude"].auth_status is not None and seen["claude"].auth_status.startswith("signed in: ")
    assert seen["codex"].auth_status is not None and seen["codex"].auth_status.startswith("signed in: ")
    assert seen["opencode"].auth_status is None
    assert not [r for r in records if r.getMessage() == "ignored notification _auth/status_update"]
    assert not [r for r in records if r.levelno >= logging.WARNING and "_auth" in r.getMessage()]


async def test_pi_banner_reaches_on_update_the_journal_and_the_panel(
    workspace: Workspace, vendor_homes: VendorHomes
) -> None:
    with agent_environment():
        workspace.add_profiles(profile(VENDORS["pi"], vendor_homes["pi"]))
        svc = workspace.service()
        with anyio.fail_after(60):
            handle = await svc.sessions.connect("pi")
        try:
            seen: list[silo_nb.AgentSessionUpdate] = []
            handle.on_update(seen.append)  # after connect: the banner came while connect returned
            with anyio.fail_after(10):
                while not any(u.kind == "agent_message_chunk" for u in seen):
                    await anyio.sleep(0.05)
            assert seen[0].text == "pi v1.6.0\n---\n"
            assert svc.get_state()[0].activity == "idle"  # a banner is not a turn of the agent's
            panel = SessionPanel(handle, svc)
            panel.flush()
            assert "pi v1.6.0" in panel.snapshot()[1]
            panel.close_all()
        finally:
            await handle.aclose()
        journal = await svc.sessions.read_journal(handle.session_id)
        assert [u.text for u in journal if u.kind == "agent_message_chunk"] == ["pi v1.6.0\n---\n"]
        assert processes_with_home(vendor_homes["pi"]) == []


def test_sigkill_of_the_kernel_leaves_no_agent_process(
    workspace: Workspace, vendor_homes: VendorHomes
) -> None:
    owners: dict[str, subprocess.Popen[str]] = {}
    homes = {name: vendor_homes[name if v.session else f"{name}-nokey"] for name, v in VENDORS.items()}
    with agent_environment():
        for name, vendor in VENDORS.items():
            home = homes[name]
            profiles = workspace.root / f"{name}.json"
            profiles.write_text(json.dumps({"profiles": [profile(vendor, home, id=name)]}))
            env = {**os.environ, "PYTHONPATH": str(ROOT), "SILO_NB_PROFILES": str(profiles)}
            mode = "session" if vendor.session else "initialize"
            owners[name] = subprocess.Popen(
                [
                    sys.executable,
                    str(ROOT / "tests" / "agents" / "vendor_owner.py"),
                    str(workspace.folder),
                    name,
                    mode,
                ],
                stdout=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                text=True,
                env=env,
            )
    try:
        for name, owner in owners.items():
            assert owner.stdout is not None
            line = owner.stdout.readline()  # the owners start their agents concurrently
            assert line.startswith("ready "), f"{name}: the owner said {line!r} (exit {owner.poll()})"
        assert all(processes_with_home(home, wait=0) for home in homes.values())  # their agents run
    finally:
        for owner in owners.values():
            owner.send_signal(signal.SIGKILL)
            owner.wait(10)
    assert {name: processes_with_home(home) for name, home in homes.items()} == {name: [] for name in homes}


def test_the_agents_run_on_node_24() -> None:
    with agent_environment():
        out = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout
    assert out.startswith("v24."), out
    assert (NODE_MODULES / "@agentclientprotocol" / "codex-acp" / "package.json").is_file()


async def test_claude_takes_the_system_prompt_and_forks(
    workspace: Workspace, vendor_homes: VendorHomes
) -> None:
    """claude-agent-acp 0.101.0 offers systemPrompt (append and override) and session/fork: a session
    opens with an override prompt plus the notebook guidance (the agent accepts it). Offline no turn reaches
    the model, so the session has no transcript on disk yet, and Claude's fork (which copies that
    transcript) is refused: one line with its words, nothing left behind."""
    with agent_environment():
        workspace.add_profiles(
            profile(
                VENDORS["claude"],
                vendor_homes["claude"],
                system_prompt="Be brief.",
                system_prompt_mode="override",
            )
        )
        svc = workspace.service()
        with anyio.fail_after(90):
            handle = await svc.sessions.connect("claude", notebook_guidance=True)
        try:
            assert handle.system_prompt is not None and handle.system_prompt["mode"] == "override"
            assert handle.can_fork
            with anyio.fail_after(90), pytest.raises(silo_nb.AgentSessionError) as refused:
                await handle.fork()
            message = str(refused.value)
            assert message == f"Claude could not fork session {handle.session_id}: Resource not found", (
                message
            )
            assert [info.id for info in svc.get_state()] == [handle.id]
        finally:
            await handle.aclose()
        assert processes_with_home(vendor_homes["claude"]) == []
