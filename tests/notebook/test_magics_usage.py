"""The magics as a user meets them, in a real ``InteractiveShell`` (no kernel): failed connects, unknown
names with suggestions, expansion, restored badges, broken profile files, palette turns, sign-in."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import anyio
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import silo_nb
from silo_nb.notebook.magics import NotebookSession, session_of, use_session
from silo_nb.notebook.render import transcript_html, transcript_markdown, transcript_text
from silo_nb.sessions.profiles import AgentProfilesService
from silo_nb.updates.transcript import TranscriptState
from tests.conftest import Workspace, demo_agent
from tests.support.shell import final_bundle, restart, run, said, shell

__all__ = ["shell"]  # the fixture, shared with test_magics


@pytest.mark.parametrize("background", [False, True])
async def test_a_failed_connect_registers_nothing_and_keeps_the_default(
    shell: InteractiveShell, workspace: Workspace, background: bool
) -> None:
    workspace.add_profiles(demo_agent("needs-login", "--auth-required"))
    use_session(shell, NotebookSession(shell, workspace.service()))
    await run(shell, "%silo connect demo")
    session = session_of(shell)
    line = "%silo connect needs-login --as ghost" + (" --bg" if background else "")
    captured, result = await run(shell, line)
    if background:
        await silo_nb.wait()
        with anyio.fail_after(30):
            while "ghost" in session.connections:
                await anyio.sleep(0.02)
    else:
        assert not result.success
    assert "ghost" not in session.connections and "ghost" not in shell.user_ns
    assert session.last_name == "demo"
    captured, result = await run(shell, "%%prompt\nstill talking to demo")
    assert result.success, said(captured)
    assert "still talking to demo" in final_bundle(captured).data["text/markdown"]


async def test_an_unknown_profile_lists_the_profiles_and_suggests(shell: InteractiveShell) -> None:
    captured, result = await run(shell, "%silo connect dmeo")
    assert not result.success
    message = said(captured).strip()
    assert message.splitlines() == [
        'UsageError: No agent profile with id "dmeo" — did you mean "demo"? '
        "Profiles: demo (see %silo profiles)."
    ]
    assert session_of(shell).connections == {} and session_of(shell).last_name is None


async def test_line_magics_expand_dollar_and_braces_like_ipython(
    shell: InteractiveShell, tmp_path: Path
) -> None:
    await run(shell, "%silo connect demo")
    await run(shell, "%%prompt\nhello")
    shell.user_ns["target"] = str(tmp_path / "chat.md")
    captured, result = await run(shell, "%silo export demo $target")
    assert result.success, said(captured)
    assert (tmp_path / "chat.md").is_file()
    captured, result = await run(shell, "%silo journal {demo.session_id}")
    assert result.success, said(captured)
    assert "hello" in captured.outputs[-1].data["text/markdown"]
    shell.user_ns["who"] = "demo"
    captured, result = await run(shell, "%%prompt $who\nvia a variable")
    assert result.success, said(captured)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "%silo set demo mood happy",
            'UsageError: %silo set: Silo demo agent has no option "mood" — did you mean "mode"? '
            "(options: mode, model, verbose).",
        ),
        (
            "%silo set demo mode codee",
            'UsageError: %silo set: "codee" is not a choice for "Mode" — did you mean "code"? '
            "(choices: ask, code, plan).",
        ),
        (
            "%%prompt dmeo\nhi",
            'UsageError: No connection named "dmeo" — did you mean "demo"? (connected: demo).',
        ),
        ("%silo cancle", "UsageError: %silo: unknown subcommand 'cancle' — did you mean \"cancel\"?"),
        (
            "%silo connect demo --ass x",
            'UsageError: %silo connect: unrecognized arguments: --ass x — did you mean "--as"?',
        ),
        (
            "%%prompt --atach df\nhi",
            'UsageError: %%prompt: unrecognized arguments: --atach — did you mean "--attach"?',
        ),
    ],
)
async def test_errors_list_the_valid_names_and_suggest_the_close_one(
    shell: InteractiveShell, line: str, expected: str
) -> None:
    await run(shell, "%silo connect demo")
    captured, result = await run(shell, line)
    assert not result.success
    assert said(captured).strip().splitlines() == [expected]


def test_a_cancelled_turn_says_cancelled_once() -> None:
    state = TranscriptState(status="cancelled", stop_reason="cancelled")
    for text in (transcript_text(state), transcript_markdown(state), transcript_html(state)):
        assert text.count("cancelled") == 1, text
    refused = TranscriptState(status="finished", stop_reason="refusal")
    assert "stop: refusal" in transcript_text(refused)


async def test_a_restored_cell_has_a_badge_not_a_paragraph(
    shell: InteractiveShell, workspace: Workspace
) -> None:
    await run(shell, "%silo connect demo")
    await run(shell, "%%prompt\nfirst question")
    restart(shell, workspace)
    await run(shell, "%silo connect demo")
    again, _ = await run(shell, "%%prompt\nfirst question")
    restored = again.outputs[-1]
    assert restored.metadata["silo"]["restored"] is True
    for text in restored.data.values():
        assert "--rerun" not in text and "restored from the journal" not in text
    assert "↺ restored" in restored.data["text/html"]


def test_a_broken_profile_file_warns_once_per_change(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = tmp_path / "config"
    (config / "silo").mkdir(parents=True)
    profiles = config / "silo" / "profiles.toml"
    profiles.write_text("not = [valid toml")  # a problem
    service = AgentProfilesService([config])
    with caplog.at_level(logging.WARNING, logger="silo_nb"):
        for _ in range(3):
            service.list()
        assert len([r for r in caplog.records if "ignored agent profile" in r.message]) == 1
        profiles.write_text("still = [broken")
        service.list()
        service.list()
    assert len([r for r in caplog.records if "ignored agent profile" in r.message]) == 2


WIDGET = "application/vnd.jupyter.widget-view+json"


async def test_palette_turns_join_the_saved_output_and_disconnect_freezes_it(shell: InteractiveShell) -> None:
    captured, _ = await run(shell, "%silo connect demo")
    connection = session_of(shell).connections["demo"]
    with anyio.fail_after(10):
        while not connection.handle.commands:
            await anyio.sleep(0.02)
    connection.panel.run("title", "From the palette")
    with capture_output() as later:
        await silo_nb.wait()
    # The connect cell's output is re-sent (same display_id) with the palette turn in its snapshot.
    refreshed = [o for o in later.outputs if WIDGET in o.data]
    assert refreshed, [o.data.keys() for o in later.outputs]
    assert refreshed[-1].data[WIDGET]["model_id"] == connection.box.model_id
    assert "/title From the palette" in refreshed[-1].data["text/plain"]
    assert "Renamed." in refreshed[-1].data["text/html"]
    session_id = connection.handle.session_id
    captured, _ = await run(shell, "%silo disconnect demo")
    frozen = [o for o in captured.outputs if session_id in o.data.get("text/html", "")]
    assert frozen and all(WIDGET not in o.data for o in frozen)  # nothing left for a frontend to load
    assert "Renamed." in frozen[0].data["text/html"]
    assert "disconnected" in frozen[0].data["text/html"] and ">idle<" not in frozen[0].data["text/html"]


async def test_the_sign_in_button_reconnects_where_the_panel_was(
    shell: InteractiveShell, workspace: Workspace
) -> None:
    """A click has no cell: the signed-in session's panel replaces the old one in its own output (it
    used to go to no cell at all), and the next prompt works."""

    workspace.add_profiles(demo_agent("late-login", "--auth-on-prompt"))
    use_session(shell, NotebookSession(shell, workspace.service()))
    await run(shell, "%silo connect late-login --as late")
    old = session_of(shell).connections["late"]
    places = session_of(shell).shown.live_displays(old.box)
    assert places
    captured, result = await run(shell, "%%prompt late\nhello")
    assert old.panel is not None and old.panel.sign_in.shown, said(captured)
    with capture_output() as clicked:
        old.panel.sign_in.button.click()
        with anyio.fail_after(30):
            while session_of(shell).tasks:
                await anyio.sleep(0.02)
    new = session_of(shell).connections["late"]
    assert new is not old, old.output.outputs if old.output is not None else None
    assert new.handle is not None and new.handle.is_live
    assert session_of(shell).shown.live_displays(new.box) == places  # shown where the old panel was
    widget = "application/vnd.jupyter.widget-view+json"
    assert any(o.data.get(widget, {}).get("model_id") == new.box.model_id for o in clicked.outputs)
    captured, result = await run(shell, "%%prompt late\nhello again")
    assert result.success, said(captured)


async def test_login_reconnects_a_live_session_that_needs_a_sign_in(
    shell: InteractiveShell, workspace: Workspace
) -> None:
    """``%silo login NAME`` on a connection that is live (its prompts want a sign-in) signs in and
    reconnects; it used to re-show the same panel and change nothing."""
    workspace.add_profiles(demo_agent("late-login", "--auth-on-prompt"))
    use_session(shell, NotebookSession(shell, workspace.service()))
    await run(shell, "%silo connect late-login --as late")
    old = session_of(shell).connections["late"]
    captured, result = await run(shell, "%%prompt late\nhello")
    assert "sign in" in said(captured) + final_bundle(captured).data["text/plain"]
    captured, result = await run(shell, "%silo login late")
    assert result.success, said(captured)
    new = session_of(shell).connections["late"]
    assert new is not old and new.handle is not None
    assert new.handle.session_id == old.handle.session_id  # the same session, now signed in
    captured, result = await run(shell, "%%prompt late\nhello again")
    assert result.success, said(captured)


@pytest.mark.parametrize("has_terminal", [False, True])
async def test_login_runs_a_terminal_sign_in_where_the_kernel_has_a_terminal(
    shell: InteractiveShell, workspace: Workspace, monkeypatch: pytest.MonkeyPatch, has_terminal: bool
) -> None:
    """A ``type: terminal`` method (pi, qwen, claude, copilot, opencode): with a terminal the command runs
    there, and the connection is made again; a Jupyter kernel has none, so the error says what to run."""
    from silo_nb.notebook.magics import sign_in
    from tests.conftest import raw_agent

    marker = workspace.root / "signed-in"
    workspace.add_profiles(raw_agent("terminal-login", env={"RAW_FAKE_LOGIN": str(marker)}))
    use_session(shell, NotebookSession(shell, workspace.service()))
    monkeypatch.setattr(
        sign_in, "controlling_terminal", lambda: os.open(os.devnull, os.O_RDWR) if has_terminal else None
    )
    captured, result = await run(shell, "%silo connect raw-terminal-login --as raw")
    assert "terminal-login --login-now` in a terminal (Raw login)" in said(captured)
    captured, result = await run(shell, "%silo login raw-terminal-login")  # the failed connect left no name
    if not has_terminal:
        assert not result.success and not marker.exists()
        assert "Raw login is a terminal sign-in — run `" in said(captured)
        assert (
            "raw_agent.py terminal-login --login-now` in a terminal (JupyterLab: File ▸ New ▸ Terminal), "
            "then %silo connect raw-terminal-login again." in said(captured)
        )
        return
    assert result.success, said(captured)
    assert marker.read_text() == "signed in\n"
    connection = session_of(shell).connections["raw_terminal_login"]
    assert connection.handle is not None and connection.handle.is_live
