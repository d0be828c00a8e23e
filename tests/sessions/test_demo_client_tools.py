"""What the demo agent asks of silo_nb, end to end through a real session: its notes edit through
``fs/*``, a command in a client terminal, a question before a risky step, an image in the prompt; and what
it does instead when the profile offers less."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

import silo_nb
from silo_nb.model.agent_requests import AgentElicitationRequest
from tests.conftest import Workspace, demo_agent

PNG_1PX = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def text(value: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": value}]


def allow(request: silo_nb.AgentPermissionRequest) -> None:
    request.respond(next(o.option_id for o in request.options if o.kind == "allow_once"))


def reply(updates: list[silo_nb.AgentSessionUpdate]) -> str:
    return "".join(u.text or "" for u in updates if u.kind == "agent_message_chunk")


def journal_kinds(svc: silo_nb.AgentsService, handle: silo_nb.AgentSessionHandle) -> list[str]:
    path = svc.sessions.journals.path(svc.workspace_id, handle.session_id)
    return [json.loads(line)["kind"] for line in path.read_text().splitlines()]


@pytest.mark.parametrize("subprocess", [False, True], ids=["in-process", "subprocess"])
async def test_the_notes_edit_goes_through_the_client_and_is_journaled_with_its_diff(
    workspace: Workspace, subprocess: bool
) -> None:
    svc = workspace.service(subprocess=subprocess)
    async with await svc.sessions.connect("demo") as handle:
        handle.on_permission(allow)
        updates: list[silo_nb.AgentSessionUpdate] = []
        handle.on_update(updates.append)
        assert (await handle.prompt(text("edit: through the client"))).stop_reason == "end_turn"
        assert "Edited notes.md." in reply(updates)
        assert (workspace.folder / "notes.md").read_text() == "# Notes\n\n- through the client\n"
        kinds = journal_kinds(svc, handle)
        assert kinds.count("file_write") == 1  # the client wrote it, so the edit is silo_nb's to journal
        (write,) = [u for u in handle.journal_updates() if u.kind == "file_write"]
        assert write.raw["path"] == str(workspace.folder / "notes.md") and write.raw["created"] is True
        assert write.raw["newText"] == "# Notes\n\n- through the client\n"


async def test_a_profile_without_files_leaves_the_agent_to_write_itself(workspace: Workspace) -> None:
    workspace.add_profiles(demo_agent("demo-nofs", fs_read=False, fs_write=False))
    svc = workspace.service()
    async with await svc.sessions.connect("demo-nofs") as handle:
        handle.on_permission(allow)
        assert (await handle.prompt(text("edit: by itself"))).stop_reason == "end_turn"
        assert (workspace.folder / "notes.md").read_text() == "# Notes\n\n- by itself\n"
        assert "file_write" not in journal_kinds(svc, handle)


@pytest.mark.parametrize("subprocess", [False, True], ids=["in-process", "subprocess"])
async def test_the_tests_run_in_a_client_terminal_shown_inside_the_tool_call(
    workspace: Workspace, subprocess: bool
) -> None:
    svc = workspace.service(subprocess=subprocess)
    async with await svc.sessions.connect("demo") as handle:
        updates: list[silo_nb.AgentSessionUpdate] = []
        handle.on_transcript(updates.append)
        assert (await handle.prompt(text("please run the tests"))).stop_reason == "end_turn"
        assert "The tests ran: 3 passed in 0.01s." in reply(updates)
        call = next(u.tool_call for u in updates if u.kind == "tool_call")
        assert (
            call is not None
            and call.title == "Run the tests"
            and call.content
            and call.content[0].type == "terminal"
        )
        outputs = [u for u in updates if u.kind == "terminal_output"]
        assert "3 passed in 0.01s\npython 3." in "".join(u.raw["output"] for u in outputs)
        assert outputs[-1].raw["exitStatus"] == {"exitCode": 0, "signal": None}
        assert [u.tool_call.status for u in updates if u.kind == "tool_call_update" and u.tool_call][
            -1
        ] == "completed"


async def test_without_a_terminal_the_agent_says_so(workspace: Workspace) -> None:
    workspace.add_profiles(demo_agent("demo-noterm", terminal=False))
    svc = workspace.service()
    async with await svc.sessions.connect("demo-noterm") as handle:
        updates: list[silo_nb.AgentSessionUpdate] = []
        handle.on_update(updates.append)
        await handle.prompt(text("run the tests"))
        assert "this client offers no terminal" in reply(updates)


async def test_a_risky_step_asks_first_and_acts_on_the_answer(workspace: Workspace) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        asked: list[AgentElicitationRequest] = []

        def answer(request: AgentElicitationRequest) -> None:
            asked.append(request)
            request.accept({"confirm": True, "reason": "scratch only"})

        listener = handle.on_elicitation(answer)
        updates: list[silo_nb.AgentSessionUpdate] = []
        handle.on_transcript(updates.append)
        await handle.prompt(text("a risky step"))
        assert asked and asked[0].message == "Before a risky step: may I delete scratch.txt?"
        assert "You said yes (scratch only)" in reply(updates)
        assert [u.kind for u in updates].count("question_decision") == 1

        listener.dispose()  # nobody to answer: the question is cancelled, the agent hears "cancel"
        updates.clear()
        await handle.prompt(text("another risky step"))
        assert "You said no (cancel): scratch.txt stays." in reply(updates)


async def test_an_image_reaches_the_agent(workspace: Workspace) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        assert handle.prompt_capabilities.image is True
        updates: list[silo_nb.AgentSessionUpdate] = []
        handle.on_update(updates.append)
        data = base64.b64encode(PNG_1PX).decode()
        await handle.prompt(
            [*text("what is this?"), {"type": "image", "mimeType": "image/png", "data": data}]
        )
        assert f"an image (image/png, {len(data) * 3 // 4:,} bytes)" in reply(updates)
