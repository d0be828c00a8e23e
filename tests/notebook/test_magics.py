"""``%silo`` and ``%%prompt`` in a real ``InteractiveShell`` (widgets on a recording comm, no kernel).

The blocking path is exercised exactly as in a kernel: the input transformer rewrites the cell into a
top-level ``await`` that ``run_cell_async`` runs on this test's event loop.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import silo_nb
from silo_nb.notebook.attachments import attachments_folder
from silo_nb.notebook.magics import NotebookSession, session_of, use_session
from silo_nb.notebook.magics import prompt as prompt_module
from silo_nb.notebook.magics import silo as silo_module
from tests.conftest import Workspace, demo_agent
from tests.support.shell import RecordingComm, final_bundle, restart, run, shell

__all__ = ["shell"]  # the fixture


async def test_connect_binds_the_handle_and_shows_the_panel(shell: InteractiveShell) -> None:
    captured, result = await run(shell, "%silo connect demo")
    assert result.success, result.error_in_exec
    handle = shell.user_ns["demo"]
    assert isinstance(handle, silo_nb.AgentSessionHandle) and handle.is_live
    widget_views = [o for o in captured.outputs if "application/vnd.jupyter.widget-view+json" in o.data]
    assert widget_views, "the session panel is a widget"
    await run(shell, "%silo connect demo --as second")
    assert shell.user_ns["second"] is not handle


async def test_prompt_blocks_until_the_turn_ends_and_leaves_a_static_bundle(shell: InteractiveShell) -> None:
    await run(shell, "%silo connect demo")
    shell.user_ns["topic"] = "penguins"
    captured, result = await run(shell, "%%prompt\nTell me about {topic} and {unknown}")
    assert result.success, result.error_in_exec
    live = captured.outputs[0]
    assert "application/vnd.jupyter.widget-view+json" in live.data  # the live turn view came first
    bundle = final_bundle(captured)
    assert set(bundle.data) >= {"text/html", "text/markdown", "text/plain"}
    assert "Tell me about penguins and {unknown}" in bundle.data["text/markdown"]
    assert (
        "## Silo demo agent" in bundle.data["text/markdown"]
        or "Silo demo agent" in bundle.data["text/markdown"]
    )
    silo = bundle.metadata["silo"]
    assert silo["session_id"] == shell.user_ns["demo"].session_id and silo["profile_id"] == "demo"
    assert silo["cell_id"].startswith("src-1-") and silo["turn"] == 1
    closes = [m for m, _ in RecordingComm.sent if m == "comm_close"]
    assert closes, "the turn's widgets are closed after the swap"


async def test_permission_is_answered_from_the_turn_view(shell: InteractiveShell) -> None:
    await run(shell, "%silo connect demo")

    def click_allow(request: silo_nb.AgentPermissionRequest) -> None:
        request.respond("allow-once")

    shell.user_ns["demo"].on_permission(click_allow)
    captured, _ = await run(shell, "%%prompt\nedit the notes")
    markdown = final_bundle(captured).data["text/markdown"]
    assert "Edited notes.md." in markdown


async def test_command_cell_and_attachments(shell: InteractiveShell, workspace: Workspace) -> None:
    await run(shell, "%silo connect demo")
    captured, _ = await run(shell, "%%prompt\n/title Penguin study")
    assert "Renamed." in final_bundle(captured).data["text/markdown"]
    assert session_of(shell).service.get_state()[0].title == "Penguin study"

    class Frame:  # duck-typed DataFrame
        shape = (3, 2)

        def head(self, n: int) -> Frame:
            return self

        def to_csv(self) -> str:
            return "a,b\n1,2\n"

    shell.user_ns["df"] = Frame()
    shell.user_ns["note"] = "remember the ice"
    (workspace.folder / "data.txt").write_text("x = 1\n")
    captured, result = await run(shell, "%%prompt --attach df note --file data.txt\nlook at these")
    assert result.success, result.error_in_exec
    assert "3 attachment" in final_bundle(captured).data["text/markdown"]


async def test_spilled_attachments_are_private_and_go_with_disconnect(
    shell: InteractiveShell, workspace: Workspace
) -> None:
    """An agent without embedded context gets attachments as files: 0600 in a 0700 per-session folder,
    removed by ``%silo disconnect`` (not by a reconnect, whose earlier prompts may point at them)."""
    workspace.add_profiles(demo_agent("plain", "--no-embedded-context"))
    use_session(shell, NotebookSession(shell, workspace.service()))
    await run(shell, "%silo connect plain")
    session_id = shell.user_ns["plain"].session_id
    shell.user_ns["note"] = "remember the ice"
    _, result = await run(shell, "%%prompt --attach note\nread this")
    assert result.success, result.error_in_exec
    folder = attachments_folder(workspace.folder, session_id)
    (spilled,) = list(folder.iterdir())
    assert spilled.read_text() == "remember the ice"
    assert spilled.stat().st_mode & 0o777 == 0o600 and folder.stat().st_mode & 0o777 == 0o700
    await run(shell, "%silo connect plain")  # a reconnect keeps them
    assert spilled.exists()
    await run(shell, "%silo disconnect plain")
    assert not folder.exists()


async def test_errors_are_one_line(shell: InteractiveShell, workspace: Workspace) -> None:
    workspace.add_profiles(demo_agent("needs-login", "--auth-required"))
    use_session(shell, NotebookSession(shell, workspace.service()))
    for cell, expected in [
        ("%silo connect nope", 'No agent profile with id "nope".'),
        ("%silo connect needs-login", "sign in: run %silo login needs-login demo-login (Demo login)."),
        ("%%prompt ghost\nhello", 'No connection named "ghost"'),
        ("%silo frobnicate", "unknown subcommand 'frobnicate'"),
    ]:
        captured, result = await run(shell, cell)
        assert not result.success
        message = captured.stderr + captured.stdout
        assert "UsageError" in message and expected in message, message
        assert "Traceback" not in message


async def test_set_cancel_commands_agents_journal_export_disconnect(
    shell: InteractiveShell, tmp_path: Path
) -> None:
    await run(shell, "%silo connect demo")
    handle = shell.user_ns["demo"]
    captured, _ = await run(shell, "%silo set demo mode code")
    assert "mode = code" in captured.stdout
    captured, _ = await run(shell, "%silo set demo verbose true")
    assert {o.id: o.current_value for o in handle.config_options}["verbose"] is True
    captured, result = await run(shell, "%silo set demo mode yolo")
    message = captured.stderr + captured.stdout
    assert not result.success and '"yolo" is not a choice for "Mode" (choices: ask, code, plan).' in message
    await run(shell, "%%prompt\nhello")
    with anyio.fail_after(10):
        while not handle.commands:  # announced a moment after the session started
            await anyio.sleep(0.02)
    captured, _ = await run(shell, "%silo commands")
    assert "/explain <what to explain>" in captured.stdout
    captured, _ = await run(shell, "%silo agents")
    assert any("application/vnd.jupyter.widget-view+json" in o.data for o in captured.outputs)
    captured, _ = await run(shell, f"%silo journal {handle.session_id}")
    assert "hello" in captured.outputs[-1].data["text/markdown"]
    await run(shell, f"%silo export demo {tmp_path / 'chat.md'}")
    await run(shell, f"%silo export demo {tmp_path / 'chat.html'}")
    assert "hello" in (tmp_path / "chat.md").read_text()
    assert (tmp_path / "chat.html").read_text().startswith("<!doctype html>")
    captured, result = await run(shell, f"%silo export demo {tmp_path / 'missing' / 'chat.md'}")
    assert not result.success and "No such file or directory" in captured.stderr + captured.stdout
    assert "Traceback" not in captured.stderr + captured.stdout
    await run(shell, "%silo cancel demo")  # nothing running: harmless
    captured, _ = await run(shell, "%silo disconnect demo")
    assert "disconnected demo" in captured.stdout
    assert handle.disposed


async def test_restart_then_run_all_repaints_from_the_journal(
    shell: InteractiveShell, workspace: Workspace
) -> None:
    await run(shell, "%silo connect demo")
    session_id = shell.user_ns["demo"].session_id
    first, _ = await run(shell, "%%prompt\nfirst question")
    second, _ = await run(shell, "%%prompt\nsecond question")
    restart(shell, workspace)
    await run(shell, "%silo connect demo")
    handle = shell.user_ns["demo"]
    assert handle.session_id == session_id and handle.resume_outcome == "resumed"
    before = [
        u.text
        for u in await session_of(shell).service.sessions.read_journal(session_id)
        if u.kind == "user_message_chunk"
    ]
    again1, _ = await run(shell, "%%prompt\nfirst question")
    again2, _ = await run(shell, "%%prompt\nsecond question")
    after = [
        u.text
        for u in await session_of(shell).service.sessions.read_journal(session_id)
        if u.kind == "user_message_chunk"
    ]
    assert after == before  # no prompt reached the agent
    for old, new in ((first, again1), (second, again2)):
        restored = new.outputs[-1]
        assert restored.metadata["silo"]["restored"] is True
        assert "application/vnd.jupyter.widget-view+json" not in restored.data
        old_md = final_bundle(old).data["text/markdown"]
        # The same transcript under the same header row, whose status now says "restored".
        header, body = old_md.split("\n---")[0].split("\n", 1)
        assert header.startswith("**Silo demo agent**") and "finished" in header
        assert restored.data["text/markdown"].startswith("**Silo demo agent** · _↺ restored_")
        assert body.strip()[:200] in restored.data["text/markdown"]
    # --rerun sends it again; so does running the same cell twice in one kernel.
    await run(shell, "%%prompt --rerun\nfirst question")
    rerun = [
        u.text
        for u in await session_of(shell).service.sessions.read_journal(session_id)
        if u.kind == "user_message_chunk"
    ]
    assert rerun == [*before, "first question"]


async def test_command_palette_runs_a_turn_under_the_panel(shell: InteractiveShell) -> None:
    await run(shell, "%silo connect demo")
    connection = session_of(shell).connections["demo"]
    with anyio.fail_after(10):
        while not connection.handle.commands:
            await anyio.sleep(0.02)
    connection.panel.run("title", "From the palette")
    await silo_nb.wait()
    (output,) = connection.output.outputs
    assert "Renamed." in output["data"]["text/html"]
    assert session_of(shell).service.get_state()[0].title == "From the palette"


async def test_a_blocking_turn_is_witnessed_a_background_one_is_not(shell: InteractiveShell) -> None:
    await run(shell, "%silo connect demo")
    service = session_of(shell).service
    await run(shell, "%%prompt\nlooked at while it ran")
    assert service.get_state()[0].needs_attention is False  # its own cell was running when it ended
    await run(shell, "%%prompt --bg\nnobody watching")
    await silo_nb.wait()
    info = service.get_state()[0]
    assert info.needs_attention is True and info.attention_since is not None


async def test_a_restored_turn_shows_the_permission_decision(
    shell: InteractiveShell, workspace: Workspace
) -> None:
    await run(shell, "%silo connect demo")
    shell.user_ns["demo"].on_permission(lambda request: request.respond("allow-once"))
    live, _ = await run(shell, "%%prompt\nedit the notes")
    restart(shell, workspace)
    await run(shell, "%silo connect demo")
    repainted, _ = await run(shell, "%%prompt\nedit the notes")  # same cell, same position: from the journal
    assert repainted.outputs[-1].metadata["silo"]["restored"] is True
    for captured in (live, repainted):
        markdown = final_bundle(captured).data["text/markdown"]
        assert "Permission: Edit notes.md → **Allow once**" in markdown, markdown
        assert "Edited notes.md." in markdown


async def test_help_is_generated_from_the_declared_arguments(shell: InteractiveShell) -> None:
    def flat(text: str) -> str:  # argparse wraps to the terminal's width
        return " ".join(text.split())

    captured, result = await run(shell, "%silo?")
    assert result.success, result.error_in_exec
    # argparse's usage for each subcommand (options the parser knows, in its own order), then its help.
    help_text = flat(captured.stdout)
    assert "%silo connect [--as NAME] [--replay SESSION_ID] [--speed SPEED] [--cwd DIR] [--new]" in help_text
    assert "--discard continue in a new agent session, dropping the transcript" in help_text
    assert "%silo set NAME OPTION VALUE" in help_text
    captured, _ = await run(shell, "%%prompt?\n")
    help_text = flat(captured.stdout)
    assert "%%prompt [--bg] [--rerun] [--attach VAR [VAR ...]]" in help_text
    assert "--rerun send it again even if this cell's turn is in the journal" in help_text
    assert shell.find_cell_magic("prompt").__doc__ == prompt_module.run_prompt.__doc__


@pytest.mark.parametrize("line", ["%silo", "%silo help", "%silo --help"])
async def test_silo_help_prints_the_usage_of_every_command(shell: InteractiveShell, line: str) -> None:
    captured, result = await run(shell, line)
    assert result.success, result.error_in_exec
    usage_lines = [row for row in captured.stdout.splitlines() if row.startswith("%")]
    commands = [row.split()[1] if row.startswith("%silo ") else row.split()[0] for row in usage_lines]
    assert commands[:-1] == [*silo_module.SUBCOMMANDS, "%%prompt"]
    assert "%silo journal SESSION_ID\n    Show a session's journal as a transcript" in captured.stdout


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("%silo connect demo --bogus", "UsageError: %silo connect: unrecognized arguments: --bogus"),
        (
            "%silo connect",
            "UsageError: %silo connect: name a PROFILE (see %silo profiles), or --replay SESSION_ID.",
        ),
        ("%silo set demo mode", "UsageError: %silo set: the following arguments are required: VALUE"),
        ("%silo export demo 'chat.md", "UsageError: %silo: No closing quotation"),
        ("%silo cancel -h", "UsageError: %silo cancel: unrecognized arguments: -h"),
        (
            "%%prompt --attach\nhello",
            "UsageError: %%prompt: argument --attach: expected at least one argument",
        ),
    ],
)
async def test_a_bad_option_is_one_usage_error_line(
    shell: InteractiveShell, cell: str, expected: str
) -> None:
    captured, result = await run(shell, cell)
    assert not result.success
    message = (captured.stderr + captured.stdout).strip()
    assert message.splitlines() == [expected]


async def test_a_bad_option_in_a_background_prompt_is_one_line_in_its_output(shell: InteractiveShell) -> None:
    with capture_output() as captured, anyio.fail_after(10):
        cell = "%%prompt --bg --attach\nhello"
        result = await shell.run_cell_async(cell, transformed_cell=shell.transform_cell(cell))
        await silo_nb.wait()  # the registered magic reports into its placeholder output
    assert result.success  # a --bg cell returns at once
    (error,) = {o.data["text/plain"] for o in captured.outputs if o.data["text/plain"].startswith("error")}
    assert error == "error: %%prompt: argument --attach: expected at least one argument"
    assert "Traceback" not in captured.stdout + captured.stderr


async def test_the_palette_sends_through_the_same_function_as_prompt(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[tuple[str, Any]] = []
    real = prompt_module.send_turn

    def spy(*args: Any, **kwargs: Any) -> Any:
        sent.append((args[3], kwargs.get("output")))
        return real(*args, **kwargs)

    monkeypatch.setattr(prompt_module, "send_turn", spy)
    await run(shell, "%silo connect demo")
    connection = session_of(shell).connections["demo"]
    await run(shell, "%%prompt\nhello")
    with anyio.fail_after(10):
        while not connection.handle.commands:
            await anyio.sleep(0.02)
    connection.panel.run("title", "Via the palette")
    await silo_nb.wait()
    assert sent == [("hello", None), ("/title Via the palette", connection.output)]
    (output,) = connection.output.outputs
    assert "Renamed." in output["data"]["text/html"]
