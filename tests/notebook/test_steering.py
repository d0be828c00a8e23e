"""Input to a running turn (issue 31 item 6, ``_session/steering``): ``handle.steer(text)`` and the text box
under a running turn send it to an agent that advertises ``_meta.steering``; the text is shown where it came
in the turn and journaled with how the agent took it (restored as live); every refusal is one line."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest

import silo_nb
from silo_nb.acp import AcpRpcError
from silo_nb.model import SteerLine
from silo_nb.notebook.render import transcript_html, transcript_text
from silo_nb.notebook.widgets import TurnView
from silo_nb.updates import SteerEntry
from silo_nb.updates.transcript import fold_all
from tests.agents.scripted import Peer, scripted_service
from tests.conftest import Workspace
from tests.notebook.widget_utils import Sent, frontend_click, frontend_update

STEERING = {"steering": {"supported": True}}


class SteeredAgent:
    """A turn that waits for one steer, then says what it was told; ``answer`` is the steer's answer."""

    def __init__(self, answer: Any = None) -> None:
        self.answer = answer if answer is not None else {"outcome": "injected"}
        self.received: list[dict[str, Any]] = []
        self.steered = anyio.Event()

    async def turn(self, peer: Peer, prompt: str) -> None:
        await peer.update(
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Loading"}}
        )
        with anyio.move_on_after(5):
            await self.steered.wait()
        said = self.received[-1]["prompt"][0]["text"] if self.received else "nothing"
        await peer.update(
            {
                "sessionUpdate": "agent_message_chunk",
                "messageId": "m2",
                "content": {"type": "text", "text": said},
            }
        )

    async def steering(self, _peer: Peer, params: dict[str, Any]) -> Any:
        self.received.append(params)
        self.steered.set()
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def service(workspace: Workspace, agent: SteeredAgent, *, advertised: bool = True) -> silo_nb.AgentsService:
    return scripted_service(
        workspace,
        agent.turn,
        methods={"_session/steering": agent.steering},
        init_meta=STEERING if advertised else None,
    )


def prompt(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


async def test_steer_reaches_the_running_turn_and_is_journaled(workspace: Workspace) -> None:
    agent = SteeredAgent()
    async with await service(workspace, agent).sessions.connect("scripted") as handle:
        assert handle.can_steer
        live: list[Any] = []
        handle.on_transcript(live.append)
        turn = asyncio.create_task(handle.prompt(prompt("load the data")))
        while not live or live[-1].kind != "agent_message_chunk":
            await asyncio.sleep(0.01)
        assert await handle.steer("use df2 instead") == "injected"
        await turn
        journal = handle.journal_updates()
    (sent,) = agent.received
    assert sent["prompt"] == [{"type": "text", "text": "use df2 instead"}]
    assert (
        sent["sessionId"] == handle.session_id
        and sent["_meta"]["steering"]["idleBehavior"] == "promptRequired"
    )
    lines = [line for line in map(SteerLine.read, journal) if line is not None]
    assert [(line.text, line.outcome) for line in lines] == [
        ("use df2 instead", None),
        ("use df2 instead", "injected"),
    ]
    state = fold_all(live)
    steers = [e for e in state.entries if isinstance(e, SteerEntry)]
    assert len(steers) == 1 and steers[0].outcome == "injected"
    assert "↪ You, mid-turn · taken into the turn" in transcript_html(state)
    assert "you (mid-turn, taken into the turn)> use df2 instead" in transcript_text(state)
    assert state.reply_text.endswith("use df2 instead")  # the agent read it in the same turn
    kinds = [u.kind for u in journal]
    restored = journal[kinds.index("user_message_chunk") : kinds.index("turn_end") + 1]
    assert transcript_html(fold_all(restored)) == transcript_html(state)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            AcpRpcError(-32602, "steer params require a non-empty prompt array"),
            "did not take the input: steer",
        ),
        (
            {"outcome": "promptRequired", "reason": "noRunningTurn"},
            "the turn had ended — send it as a prompt",
        ),
    ],
)
async def test_a_refused_steer_is_one_line_and_shown(
    workspace: Workspace, answer: Any, expected: str
) -> None:
    agent = SteeredAgent(answer)
    async with await service(workspace, agent).sessions.connect("scripted") as handle:
        live: list[Any] = []
        handle.on_transcript(live.append)
        turn = asyncio.create_task(handle.prompt(prompt("go")))
        while not live or live[-1].kind != "agent_message_chunk":
            await asyncio.sleep(0.01)
        with pytest.raises(silo_nb.AgentSessionError) as caught:
            await handle.steer("stop that")
        await turn
    assert expected in str(caught.value) and "\n" not in str(caught.value)
    (entry,) = [e for e in fold_all(live).entries if isinstance(e, SteerEntry)]
    assert entry.outcome == "refused" and entry.note is not None
    assert "not taken — " in transcript_text(fold_all(live))


async def test_steer_without_support_or_without_a_turn_says_what_to_do(workspace: Workspace) -> None:
    agent = SteeredAgent()
    async with await service(workspace, agent, advertised=False).sessions.connect("scripted") as handle:
        assert not handle.can_steer
        with pytest.raises(silo_nb.AgentSessionError, match="does not take input during a turn"):
            await handle.steer("hello")
    async with await service(workspace, agent).sessions.connect("scripted") as handle:
        with pytest.raises(silo_nb.AgentSessionError, match=r"No turn of .* is running"):
            await handle.steer("hello")
        with pytest.raises(silo_nb.AgentSessionInputError):
            await handle.steer("   ")
    assert agent.received == []  # nothing reached the agent


async def test_the_box_under_a_running_turn_sends_it(workspace: Workspace, comms: list[Sent]) -> None:
    agent = SteeredAgent()
    async with await service(workspace, agent).sessions.connect("scripted") as handle:
        view = TurnView(label=handle.agent_name, on_steer=handle.steer if handle.can_steer else None)
        handle.on_transcript(view.transcript.apply)
        assert view.steer_row.layout.display == "flex"
        turn = asyncio.create_task(handle.prompt(prompt("go")))
        await asyncio.sleep(0.05)
        frontend_update(view.steer_box, value="plot it in blue")
        frontend_click(view.steer_button)
        assert view.steer_box.value == ""  # taken, cleared
        await turn
        view.transcript.set_status("finished")
        assert view.steer_row.layout.display == "none"  # gone when the turn ends
        assert view.steer() is False
        view.close_all()
    assert [params["prompt"][0]["text"] for params in agent.received] == ["plot it in blue"]


async def test_the_box_shows_why_input_was_not_taken(comms: list[Sent]) -> None:
    async def refuse(_text: str) -> str:
        raise silo_nb.AgentSessionError("Scripted: the turn had ended — send it as a prompt")

    view = TurnView(label="Scripted", on_steer=refuse)
    assert view.steer("hello") is True
    await asyncio.sleep(0.01)
    assert "✗ Scripted: the turn had ended" in view.steer_note.value
    assert TurnView(label="x").steer_row.layout.display == "none"  # an agent that does not take it: no box
    view.close_all()


async def test_the_demo_agent_takes_input_mid_turn(workspace: Workspace) -> None:
    """The built-in demo agent advertises steering; its slow count says the input at its next step."""
    async with await workspace.service().sessions.connect("demo") as handle:
        assert handle.can_steer
        live: list[Any] = []
        handle.on_transcript(live.append)
        turn = asyncio.create_task(handle.prompt(prompt("slow: count to forty")))
        while not any("Counting slowly" in (u.text or "") for u in live):
            await asyncio.sleep(0.02)
        assert await handle.steer("Say when you pass twenty") == "injected"
        await turn
    state = fold_all(live)
    assert "**Noted mid-turn:** Say when you pass twenty" in state.reply_text
    assert state.reply_text.rstrip().endswith("40.")  # the count went on after it
    (entry,) = [e for e in state.entries if isinstance(e, SteerEntry)]
    assert entry.outcome == "injected"
