"""Issue 21, items 5, 6 and 7 and the unknown ``sessionId``: permission requests an agent shapes to mislead
or to wedge the turn. In-process scripted agents (the behaviour is the protocol's); each test checks the
answer the agent received against the one the transcript shows.

- 10,000 options: a listener sees them all (the widget shows a bounded number: ``tests/notebook``).
- No options, or an option id offered twice (``x``=Allow and ``x``=Reject): answered ``cancelled`` at once
  with a note in the transcript; no listener or policy is asked (a policy's "reject" would send ``x``,
  which the agent reads as its Allow).
- A listener or a policy that raises: ``cancelled`` at once, and the transcript says what raised.
- A path with a NUL byte: the built-in policy treats it as outside the session's folder (it raised
  ``ValueError: embedded null byte``, and in ``run_grid`` the cell waited out its timeout).
- A request naming another session: a JSON-RPC error, nothing recorded in this session.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import silo_nb
from silo_nb.model.agent_requests import AgentPermissionRequest
from silo_nb.updates.transcript import fold_all
from tests.agents.scripted import Peer, scripted_service
from tests.conftest import Workspace

OPTIONS = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]


def edit(path: str = "notes.md", options: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "toolCall": {
            "toolCallId": "t1",
            "title": f"Edit {path}",
            "kind": "edit",
            "locations": [{"path": path}],
        },
        "options": OPTIONS if options is None else options,
    }


def asking(params: dict[str, Any], answers: list[Any]) -> Any:
    async def turn(peer: Peer, _text: str) -> None:
        answers.append(await peer.ask_permission(params))

    return turn


async def one_turn(
    workspace: Workspace, params: dict[str, Any], listen: Any = None
) -> tuple[list[Any], list[AgentPermissionRequest], Any]:
    """(what the agent received, what listeners saw, the turn's transcript as the journal holds it)."""
    answers: list[Any] = []
    seen: list[AgentPermissionRequest] = []
    svc = scripted_service(workspace, asking(params, answers))
    with anyio.fail_after(20):
        async with await svc.sessions.connect("scripted") as handle:
            handle.on_permission(seen.append)
            if listen is not None:
                handle.on_permission(listen)
            await handle.prompt([{"type": "text", "text": "go"}])
            journal = await svc.sessions.read_journal(handle.session_id)
    return answers, seen, fold_all(journal)


def shown(state: Any) -> tuple[str | None, str | None]:
    (entry,) = [e for e in state.entries if type(e).__name__ == "PermissionEntry"]
    return entry.choice, entry.note


async def test_ten_thousand_options_reach_the_listener_and_the_choice_is_sent(workspace: Workspace) -> None:
    many = [{"optionId": f"o{i}", "name": f"Option {i}", "kind": "allow_once"} for i in range(10_000)]
    answers, seen, state = await one_turn(
        workspace, edit(options=many), listen=lambda request: request.respond("o9999")
    )
    assert len(seen[0].options) == 10_000
    assert answers == [{"outcome": {"outcome": "selected", "optionId": "o9999"}}]
    assert shown(state) == ("o9999", None)


async def test_ten_thousand_options_are_journaled_once(workspace: Workspace) -> None:
    """The request line is the record of every option; the decision line keeps the chosen one (its name
    and kind are all a reader needs), so 10,000 options are not written, read and folded twice."""
    many = [{"optionId": f"o{i}", "name": f"Option {i}", "kind": "allow_once"} for i in range(10_000)]
    svc_answers: list[Any] = []
    svc = scripted_service(workspace, asking(edit(options=many), svc_answers))
    with anyio.fail_after(20):
        async with await svc.sessions.connect("scripted") as handle:
            handle.on_permission(lambda request: request.respond("o9999"))
            await handle.prompt([{"type": "text", "text": "go"}])
            journal = await svc.sessions.read_journal(handle.session_id)
    lines = {u.kind: u.raw for u in journal if u.kind.startswith("permission_")}
    assert len(lines["permission_request"]["options"]) == 10_000
    assert lines["permission_decision"]["options"] == [
        {"optionId": "o9999", "name": "Option 9999", "kind": "allow_once"}
    ]
    (entry,) = [e for e in fold_all(journal).entries if type(e).__name__ == "PermissionEntry"]
    assert entry.choice_name == "Option 9999"


@pytest.mark.parametrize(
    ("options", "note"),
    [
        ([], "the agent offered no options"),
        (
            [
                {"optionId": "x", "name": "Allow", "kind": "allow_once"},
                {"optionId": "x", "name": "Reject", "kind": "reject_once"},
            ],
            "the agent offered option id 'x' twice",
        ),
    ],
    ids=["empty", "duplicate-ids"],
)
async def test_no_options_or_repeated_ids_are_cancelled_at_once_with_a_note(
    workspace: Workspace, options: list[dict[str, Any]], note: str
) -> None:
    policy = silo_nb.PermissionPolicy("reject edit")  # would have answered "x", the agent's Allow
    answers, seen, state = await one_turn(workspace, edit(options=options), listen=policy)
    assert answers == [{"outcome": {"outcome": "cancelled"}}]
    assert seen == []  # nobody is shown a request that cannot be answered truthfully
    choice, shown_note = shown(state)
    assert choice is None and shown_note is not None and note in shown_note


def boom(_request: AgentPermissionRequest) -> None:
    raise RuntimeError("boom")


class RaisingPolicy(silo_nb.PermissionPolicy):
    def decide(self, request: AgentPermissionRequest, cwd: str) -> tuple[str | None, str]:
        raise ValueError("the rule broke")


@pytest.mark.parametrize(
    ("listen", "said"),
    [(boom, "RuntimeError: boom"), (RaisingPolicy(), "ValueError: the rule broke")],
    ids=["listener", "policy"],
)
async def test_a_raising_listener_or_policy_cancels_at_once_and_says_so(
    workspace: Workspace, listen: Any, said: str
) -> None:
    answers, _seen, state = await one_turn(workspace, edit(), listen=listen)
    assert answers == [{"outcome": {"outcome": "cancelled"}}]
    choice, note = shown(state)
    assert choice is None and note is not None and said in note


async def test_a_nul_byte_in_a_path_is_outside_for_the_policy(workspace: Workspace) -> None:
    policy = silo_nb.PermissionPolicy("allow edit inside", "reject edit outside")
    answers, _seen, state = await one_turn(workspace, edit(path="notes\x00.md"), listen=policy)
    assert answers == [{"outcome": {"outcome": "selected", "optionId": "reject"}}]
    assert shown(state)[0] == "reject"


async def test_a_request_for_another_session_is_refused_with_a_json_rpc_error(workspace: Workspace) -> None:
    answers: list[Any] = []

    async def turn(peer: Peer, _text: str) -> None:
        real, peer.session_id = peer.session_id, "someone-else"
        try:
            answers.append(await peer.ask_permission(edit()))
        finally:
            peer.session_id = real

    seen: list[AgentPermissionRequest] = []
    svc = scripted_service(workspace, turn)
    with anyio.fail_after(20):
        async with await svc.sessions.connect("scripted") as handle:
            handle.on_permission(seen.append)
            await handle.prompt([{"type": "text", "text": "go"}])
            journal = await svc.sessions.read_journal(handle.session_id)
    assert seen == [] and answers == [None]  # the agent got an error answer, no result
    assert not [u for u in journal if u.kind.startswith("permission_")]
