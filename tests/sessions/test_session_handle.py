"""``AgentSessionHandle`` through the public API, against the demo agent and scripted fakes."""

from __future__ import annotations

import json
import logging
import os
import re
from typing import Any

import anyio
import pydantic
import pytest

import silo_nb
from silo_nb.acp import process as acp_process
from tests.conftest import Workspace, demo_agent, pid_alive, raw_agent


async def wait_until(predicate: Any, timeout: float = 10) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.01)


def text(value: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": value}]


# -- turns --------------------------------------------------------------------------------------------


async def test_demo_turn_streams_markdown_thoughts_usage_and_title(workspace: Workspace) -> None:
    svc = workspace.service(subprocess=True)  # the real `python -m silo_nb_agents.demo` path, end to end
    async with await svc.sessions.connect("demo") as handle:
        assert handle.id == "chat:" + handle.session_id
        assert handle.agent_name == "Silo demo agent"
        assert handle.can_resume and handle.can_list
        assert handle.prompt_capabilities.embedded_context is True
        updates: list[silo_nb.AgentSessionUpdate] = []
        handle.on_update(updates.append)
        result = await handle.prompt(text("Summarise the data, show code"))
        assert result.stop_reason == "end_turn"
        kinds = [u.kind for u in updates]
        assert kinds[0] == "agent_thought_chunk"
        assert "agent_message_chunk" in kinds and kinds[-1] == "usage_update"
        reply = "".join(u.text or "" for u in updates if u.kind == "agent_message_chunk")
        assert "```python" in reply
        usage = updates[-1].usage
        assert usage is not None and usage.size == 200000 and usage.cost is not None
        (info,) = svc.get_state()
        assert info.title == "Summarise the data, show code"
        # Every turn is on disk before prompt() returns (no waiting for the flush timer).
        path = svc.sessions.journals.path(svc.workspace_id, handle.session_id)
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        assert lines[0]["kind"] == "user_message_chunk" and lines[0]["messageId"] == "silo-journal-user-1"
        assert [line["kind"] for line in lines[1:-1]] == kinds
        assert lines[-2]["kind"] == "usage_update"
        # The turn's end is journaled last: a synthesized line Silo's readers skip.
        end = lines[-1]
        assert end["kind"] == "turn_end" and end["raw"]["profile"] == "demo"
        assert {k: end["raw"][k] for k in ("synthesized", "outcome", "stopReason")} == {
            "synthesized": True,
            "outcome": "finished",
            "stopReason": "end_turn",
        }
        assert end["raw"]["durationMs"] >= 0 and end["raw"]["startedAt"] <= end["raw"]["endedAt"]
        assert oct(os.stat(path).st_mode & 0o777) == "0o600"


async def test_refusal_counts_as_finished(workspace: Workspace) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        result = await handle.prompt(text("please refuse this"))
        assert result.stop_reason == "refusal"
        info = svc.get_state()[0]
        assert info.activity == "idle" and info.needs_attention is True


async def test_agent_error_fails_the_turn_with_its_message(workspace: Workspace) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        with pytest.raises(silo_nb.AgentSessionError) as info:
            await handle.prompt(text("fail now"))
        assert str(info.value) == "The prompt turn failed: Internal error: the demo agent was asked to fail"
        assert svc.get_state()[0].activity == "error"
        # The session is still usable.
        assert (await handle.prompt(text("hello again"))).stop_reason == "end_turn"
        assert svc.get_state()[0].activity == "idle"


async def test_cancel_mid_turn(workspace: Workspace) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        chunks: list[silo_nb.AgentSessionUpdate] = []
        handle.on_update(chunks.append)
        results: list[silo_nb.AgentPromptResult] = []
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                results.append(await handle.prompt(text("go slow")))

            tg.start_soon(run)
            await wait_until(lambda: len(chunks) > 12)
            handle.cancel()
        assert results[0].stop_reason == "cancelled"
        assert svc.get_state()[0].activity == "idle"
        assert svc.get_state()[0].needs_attention is False


async def test_cancelling_the_awaiting_task_cancels_the_turn(workspace: Workspace) -> None:
    """The notebook's stop button cancels the task awaiting prompt(): the agent is told to stop too."""
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        chunks: list[silo_nb.AgentSessionUpdate] = []
        handle.on_update(chunks.append)
        with anyio.move_on_after(1.0):
            await handle.prompt(text("go slow"))
        assert svc.get_state()[0].activity == "idle"
        count = len(chunks)
        await anyio.sleep(0.4)
        assert len(chunks) == count  # the agent stopped streaming
        assert (await handle.prompt(text("next"))).stop_reason == "end_turn"


async def test_demo_permission_allow_reject_and_cancel(workspace: Workspace) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        seen: list[silo_nb.AgentPermissionRequest] = []
        choice = {"kind": "allow_once"}

        def answer(request: silo_nb.AgentPermissionRequest) -> None:
            seen.append(request)
            if choice["kind"]:
                request.respond(next(o.option_id for o in request.options if o.kind == choice["kind"]))
                request.respond("reject-once")  # idempotent: the first answer wins

        handle.on_permission(answer)
        updates: list[silo_nb.AgentSessionUpdate] = []
        handle.on_update(updates.append)
        assert (await handle.prompt(text("edit the notes"))).stop_reason == "end_turn"
        assert seen[-1].answer == "allow-once"
        assert seen[-1].tool_call is not None and seen[-1].tool_call.content
        assert seen[-1].tool_call.content[0].type == "diff"
        assert "Edited notes.md." in "".join(u.text or "" for u in updates)

        choice["kind"] = "reject_once"
        assert (await handle.prompt(text("edit the notes again"))).stop_reason == "end_turn"
        assert seen[-1].answer == "reject-once"

        choice["kind"] = ""
        async with anyio.create_task_group() as tg:
            results: list[silo_nb.AgentPromptResult] = []

            async def run() -> None:
                results.append(await handle.prompt(text("edit once more")))

            tg.start_soon(run)
            await wait_until(lambda: len(seen) == 3)
            assert svc.get_state()[0].activity == "blocked"
            handle.cancel()
        assert results[0].stop_reason == "cancelled"
        assert seen[-1].answered and seen[-1].answer is None


async def test_unknown_option_id_answers_cancelled(workspace: Workspace) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        handle.on_permission(lambda request: request.respond("no-such-option"))
        assert (await handle.prompt(text("edit it"))).stop_reason == "cancelled"


# -- prompt input ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "blocks",
    [
        [{"type": "image", "data": "xx"}],
        [{"type": "text"}],
        [{"type": "text", "text": 3}],
        [{"type": "resource_link"}],
        [{"type": "text", "text": "hi", "extra": 1}],
        [],
        "just a string",
        {"type": "text", "text": "a dict, not a list"},
    ],
)
async def test_invalid_blocks_raise_before_anything_is_sent(workspace: Workspace, blocks: Any) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        path = svc.sessions.journals.path(svc.workspace_id, handle.session_id)
        before = path.read_text() if path.exists() else ""
        with pytest.raises(ValueError):
            await handle.prompt(blocks)
        handle.core.journal.flush()  # type: ignore[union-attr]
        after = path.read_text() if path.exists() else ""
        assert "user_message_chunk" not in after[len(before) :]
        assert svc.get_state()[0].activity == "idle"


async def test_resource_block_needs_embedded_context(workspace: Workspace) -> None:
    workspace.add_profiles(demo_agent("demo-plain", "--no-embedded-context"))
    svc = workspace.service()
    async with await svc.sessions.connect("demo-plain") as handle:
        with pytest.raises(ValueError, match="does not accept embedded context"):
            await handle.prompt([{"type": "resource", "uri": "file:///x.csv", "text": "a,b"}])
        result = await handle.prompt(
            [{"type": "text", "text": "see"}, {"type": "resource_link", "uri": "file:///x.csv"}]
        )
        assert result.stop_reason == "end_turn"


async def test_resource_and_link_blocks_reach_the_agent(workspace: Workspace) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        updates: list[silo_nb.AgentSessionUpdate] = []
        handle.on_update(updates.append)
        blocks = [
            silo_nb.TextBlock(text="look at these"),
            {"type": "resource", "uri": "file:///data.csv", "mimeType": "text/csv", "text": "a,b\n1,2"},
            {"type": "resource_link", "uri": "file:///notes.md", "name": "notes.md"},
        ]
        assert (await handle.prompt(blocks)).stop_reason == "end_turn"
        reply = "".join(u.text or "" for u in updates)
        assert "2 attachment" in reply and "file:///data.csv" in reply and "file:///notes.md" in reply


# -- commands and config options -------------------------------------------------------------------------


async def test_commands_arrive_after_connect(workspace: Workspace) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        fired: list[int] = []
        handle.on_commands_changed(lambda: fired.append(len(handle.commands)))
        await wait_until(lambda: handle.commands)
        names = {c.name: c for c in handle.commands}
        assert set(names) == {"explain", "plan", "title", "clear", "compact"}
        assert names["explain"].input is not None and names["explain"].input.hint == "what to explain"
        assert names["clear"].input is None and names["plan"].input is None
        assert fired and fired[-1] == 5
        await handle.prompt(text("/title Renamed by command"))
        assert svc.get_state()[0].title == "Renamed by command"


async def test_config_options_select_and_boolean(workspace: Workspace) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        options = {o.id: o for o in handle.config_options}
        assert list(options) == ["mode", "model", "verbose"]
        assert options["mode"].category == "mode" and options["mode"].current_value == "ask"
        assert options["verbose"].type == "boolean" and options["verbose"].current_value is False
        before = handle.config_options
        events: list[tuple[Any, ...]] = []
        handle.on_config_options_changed(lambda: events.append(handle.config_options))
        await handle.set_config_option("mode", "code")
        assert events and events[-1] is handle.config_options  # fired before set_config_option returned
        assert {o.id: o.current_value for o in handle.config_options}["mode"] == "code"
        assert (
            before is not handle.config_options and before[0].current_value == "ask"
        )  # replaced, not mutated
        await handle.set_config_option("verbose", True)
        assert {o.id: o.current_value for o in handle.config_options}["verbose"] is True
        count = len(events)
        await handle.set_config_option("mode", "code")  # same value: nothing sent, no event
        assert len(events) == count


@pytest.mark.parametrize(
    ("option_id", "value", "message"),
    [
        ("nope", "x", 'No session config option "nope".'),
        ("mode", "yolo", '"yolo" is not a choice for "Mode".'),
        ("verbose", "yes", '"yes" is not a choice for "Verbose" (true or false).'),
    ],
)
async def test_set_config_option_validation(
    workspace: Workspace, option_id: str, value: Any, message: str
) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        with pytest.raises(ValueError) as info:
            await handle.set_config_option(option_id, value)
        assert str(info.value) == message
        assert isinstance(info.value, silo_nb.AgentSessionError)


async def test_legacy_modes_and_models_are_synthesized(workspace: Workspace) -> None:
    workspace.add_profiles(demo_agent("demo-legacy", "--legacy-modes"))
    svc = workspace.service()
    async with await svc.sessions.connect("demo-legacy") as handle:
        options = {o.id: o for o in handle.config_options}
        assert options["mode"].category == "mode" and options["model"].category == "model"
        assert [c.value for c in options["mode"].options] == ["ask", "code", "plan"]
        await handle.set_config_option("mode", "plan")
        await handle.set_config_option("model", "demo-smart")
        assert {o.id: o.current_value for o in handle.config_options} == {
            "mode": "plan",
            "model": "demo-smart",
        }
        updates: list[silo_nb.AgentSessionUpdate] = []
        handle.on_update(updates.append)
        await handle.prompt(text("which mode are we in"))
        reply = "".join(u.text or "" for u in updates)
        assert "Plan" in reply or "plan" in reply


async def test_method_not_found_falls_back_by_category(workspace: Workspace) -> None:
    workspace.add_profiles(raw_agent("config-rejects"))
    svc = workspace.service()
    async with await svc.sessions.connect("raw-config-rejects") as handle:
        await handle.set_config_option("mode", "code")  # -32601 → session/set_mode
        assert {o.id: o.current_value for o in handle.config_options}["mode"] == "code"
        updates: list[silo_nb.AgentSessionUpdate] = []
        handle.on_update(updates.append)
        await handle.prompt(text("hi"))
        assert "mode code" in "".join(u.text or "" for u in updates if u.kind == "agent_message_chunk")
        with pytest.raises(silo_nb.AgentSessionError) as info:
            await handle.set_config_option("speed", "turbo")
        assert str(info.value) == 'Raw config-rejects has no way to set "Speed" (category "_vendor").'
        with pytest.raises(silo_nb.AgentSessionError, match="thought level is locked on this plan"):
            await handle.set_config_option("thought", "high")
        assert {o.id: o.current_value for o in handle.config_options}["thought"] == "low"


async def test_current_mode_update_patches_the_mode_option(workspace: Workspace) -> None:
    workspace.add_profiles(raw_agent("config-rejects"))
    svc = workspace.service()
    async with await svc.sessions.connect("raw-config-rejects") as handle:
        fired: list[bool] = []
        handle.on_config_options_changed(lambda: fired.append(True))
        await handle.set_config_option("mode", "code")
        # set_mode answered, then the agent confirmed with current_mode_update: no second change event.
        await anyio.sleep(0.2)
        assert len(fired) == 1


async def test_profile_session_config_applied_to_new_sessions(workspace: Workspace) -> None:
    workspace.add_profiles(
        demo_agent("demo-cfg", session_config={"mode": "plan", "verbose": True, "nope": "x"})
    )
    svc = workspace.service()
    async with await svc.sessions.connect("demo-cfg") as handle:
        values = {o.id: o.current_value for o in handle.config_options}
        assert values["mode"] == "plan" and values["verbose"] is True


# -- listeners, status, list ------------------------------------------------------------------------------


async def test_listener_errors_are_logged_not_raised(
    workspace: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        good: list[str] = []

        def bad(_update: silo_nb.AgentSessionUpdate) -> None:
            raise RuntimeError("listener bug")

        handle.on_update(bad)
        handle.on_update(lambda u: good.append(u.kind))
        with caplog.at_level(logging.ERROR, logger="silo_nb"):
            assert (await handle.prompt(text("hi"))).stop_reason == "end_turn"
        assert good and "listener bug" in caplog.text
        assert all(r.name.startswith("silo_nb") for r in caplog.records if r.levelno >= logging.ERROR)


async def test_disposable_stops_delivery(workspace: Workspace) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        got: list[str] = []
        with handle.on_update(lambda u: got.append(u.kind)):
            await handle.prompt(text("one"))
        count = len(got)
        await handle.prompt(text("two"))
        assert count > 0 and len(got) == count


async def test_list_sessions(workspace: Workspace) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        await handle.prompt(text("a title for the list"))
        sessions = await handle.list_sessions()
        mine = [s for s in sessions if s.session_id == handle.session_id]
        assert mine and mine[0].cwd == str(workspace.folder) and mine[0].title == "a title for the list"
    workspace.add_profiles(demo_agent("demo-nolist", "--no-list"))
    async with await svc.sessions.connect("demo-nolist") as other:
        with pytest.raises(
            silo_nb.AgentSessionError, match=r"^Demo demo-nolist does not support session/list\.$"
        ):
            await other.list_sessions()


async def test_status_entry_lifecycle(workspace: Workspace) -> None:
    svc = workspace.service()
    snapshots: list[list[silo_nb.AgentInfo]] = []
    svc.subscribe(snapshots.append)
    handle = await svc.sessions.connect("demo")
    (info,) = svc.get_state()
    assert info.id == handle.id and info.activity == "idle" and info.chat_resume_state == "live"
    assert (
        info.agent_name == "Silo demo agent"
        and info.agent_id == "silo-demo"
        and info.cwd == str(workspace.folder)
    )
    await handle.prompt(text("hello"))
    assert svc.get_state()[0].needs_attention is True
    svc.acknowledge(handle.id)
    acknowledged = svc.get_state()[0]
    assert acknowledged.needs_attention is False and acknowledged.idle_since is not None
    await handle.aclose()
    assert svc.get_state() == [] and snapshots[-1] == []
    assert any(s and s[0].activity == "working" for s in snapshots)


# -- misbehaving agents ------------------------------------------------------------------------------------


async def test_agent_asking_the_client_outside_what_it_offers_gets_an_error(workspace: Workspace) -> None:
    """A file outside the session's folders is refused (-32602); an unknown method is -32601."""
    workspace.add_profiles(raw_agent("asks-client"))
    svc = workspace.service()
    async with await svc.sessions.connect("raw-asks-client") as handle:
        updates: list[silo_nb.AgentSessionUpdate] = []
        handle.on_update(updates.append)
        await handle.prompt(text("hi"))
        assert updates[0].text is not None
        assert updates[0].text.startswith("fs/read_text_file=-32602 terminal/create=")
        assert updates[0].text.endswith(" _vendor/x=-32601")


async def test_noisy_agent_junk_on_stdout_and_flooded_stderr(workspace: Workspace) -> None:
    workspace.add_profiles(raw_agent("noisy"))
    svc = workspace.service()
    with anyio.fail_after(30):
        async with await svc.sessions.connect("raw-noisy") as handle:
            updates: list[silo_nb.AgentSessionUpdate] = []
            handle.on_update(updates.append)
            assert (await handle.prompt(text("still there?"))).stop_reason == "end_turn"
            assert updates[0].text is not None and updates[0].text.startswith("echo: still there?")
            assert len(handle.stderr_tail(5)) == 5


async def test_agent_crash_mid_turn(workspace: Workspace) -> None:
    workspace.add_profiles(raw_agent("crash-mid-turn"))
    svc = workspace.service()
    handle = await svc.sessions.connect("raw-crash-mid-turn")
    with pytest.raises(silo_nb.AgentSessionError) as info:
        await handle.prompt(text("hi"))
    assert str(info.value).startswith("The prompt turn failed: agent exited with code 1:")
    assert "fatal: the model backend went away" in str(info.value)
    assert svc.get_state()[0].activity == "error"
    with pytest.raises(silo_nb.AgentSessionError, match=r"is no longer connected .* connect again"):
        await handle.prompt(text("again"))
    journal = await svc.sessions.read_journal(handle.session_id)
    assert [u.kind for u in journal] == ["user_message_chunk", "agent_message_chunk", "turn_end"]
    # The failed turn's end is journaled with the error exactly as the caller got it.
    assert journal[-1].raw["outcome"] == "failed" and journal[-1].raw["error"] == str(info.value)
    assert journal[-1].raw.get("stopReason") is None and "agent exited" in journal[-1].raw["error"]
    await handle.aclose()


async def test_dispose_kills_grandchildren(workspace: Workspace) -> None:
    workspace.add_profiles(raw_agent("grandchild"))
    svc = workspace.service()
    handle = await svc.sessions.connect("raw-grandchild")
    updates: list[silo_nb.AgentSessionUpdate] = []
    handle.on_update(updates.append)
    await handle.prompt(text("spawn"))
    match = re.match(r"grandchild (\d+)", updates[0].text or "")
    assert match
    grandchild = int(match.group(1))
    agent_pid = handle.core.wiring.connection.process.pid  # type: ignore[union-attr]
    assert pid_alive(grandchild) and pid_alive(agent_pid)
    handle.dispose()  # synchronous; the shutdown runs as a task
    handle.dispose()  # idempotent
    await wait_until(lambda: not pid_alive(grandchild) and not pid_alive(agent_pid), timeout=10)
    assert svc.get_state() == []


async def test_agent_that_ignores_eof_and_sigterm_is_killed(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Short graces: the test is about the escalation (EOF → SIGTERM → SIGKILL), not the waiting.
    monkeypatch.setattr(acp_process, "STDIN_CLOSE_GRACE_SECONDS", 0.2)
    monkeypatch.setattr(acp_process, "TERM_GRACE_SECONDS", 0.3)
    workspace.add_profiles(raw_agent("ignores-eof"))
    svc = workspace.service()
    handle = await svc.sessions.connect("raw-ignores-eof")
    pid = handle.core.wiring.connection.process.pid  # type: ignore[union-attr]
    with anyio.fail_after(15):  # a hang guard
        await handle.aclose()
    assert not pid_alive(pid)
    with pytest.raises(silo_nb.AgentSessionError, match="was disconnected"):
        await handle.prompt(text("hi"))


def test_validation_error_is_a_value_error() -> None:
    assert issubclass(pydantic.ValidationError, ValueError)
