"""The child sessions of one session (ACP v1.25 subagents, unstable): which ids the agent announced with
``subagent_update`` (title, whether each may be cancelled), and which sent traffic unannounced.

- The agent sends a child's traffic on the parent's connection under the child's session id: the session
  takes it as its own, marked with ``child_session_id`` (``inbound.py``), where before it dropped it.
- A child's requests (permission, questions, files, terminals) are served for a child it knows; a child's
  text chunks get ids from a synthesizer of their own, so they never join or split the parent's run.
- Bounded: :data:`CHILDREN_KEPT` children are told apart (an agent inventing ids without end shares one
  synthesizer and one record past that); the journal keeps every line whatever the count.
"""

from __future__ import annotations

from dataclasses import dataclass

from silo_nb.model import AgentSessionUpdate
from silo_nb.updates import MessageIdSynthesizer

__all__ = ["CHILDREN_KEPT", "ChildSession", "Subagents"]

CHILDREN_KEPT = 10_000
_ID_CHARS = 200
_TITLE_CHARS = 200


@dataclass
class ChildSession:
    """What the session knows of one child."""

    session_id: str
    title: str | None = None
    cancel: bool = False  # the child's capabilities.cancel: Stop may send session/cancel for it
    state: str | None = None
    announced: bool = False
    parent_session_id: str | None = None  # the child that announced it (None: this session)

    @property
    def label(self) -> str:
        return self.title or f"{'' if self.announced else 'unannounced '}child {self.session_id[:40]}"


class Subagents:
    """The children of one session, as its agent described them."""

    def __init__(self) -> None:
        self._children: dict[str, ChildSession] = {}
        self._synths: dict[str, MessageIdSynthesizer] = {}
        self._shared = MessageIdSynthesizer()  # past CHILDREN_KEPT

    def __len__(self) -> int:
        return len(self._children)

    def get(self, session_id: object) -> ChildSession | None:
        return self._children.get(session_id) if isinstance(session_id, str) else None

    def knows(self, session_id: object) -> bool:
        return isinstance(session_id, str) and session_id in self._children

    def child(self, session_id: str) -> ChildSession:
        """The child ``session_id`` names (kept as unannounced if the agent never announced it)."""
        session_id = session_id[:_ID_CHARS]
        found = self._children.get(session_id)
        if found is None:
            found = ChildSession(session_id)
            if len(self._children) < CHILDREN_KEPT:
                self._children[session_id] = found
        return found

    def synth(self, session_id: str) -> MessageIdSynthesizer:
        """The message id synthesizer of the child's own run of chunks."""
        found = self._synths.get(session_id)
        if found is None:
            if len(self._synths) >= CHILDREN_KEPT:
                return self._shared
            found = self._synths[session_id] = MessageIdSynthesizer()
        return found

    def observe(self, update: AgentSessionUpdate) -> None:
        """A ``subagent_update`` (sent under this session, or under a child announcing its own child):
        the child's title, state and cancel capability as patched (omitted unchanged, null cleared)."""
        raw = update.raw
        session_id = raw.get("sessionId")
        if not isinstance(session_id, str) or not session_id:
            return
        child = self.child(session_id)
        child.announced = True
        child.parent_session_id = update.child_session_id
        if "title" in raw:
            title = raw["title"]
            child.title = title[:_TITLE_CHARS] if isinstance(title, str) else None
        if "capabilities" in raw:
            caps = raw["capabilities"]
            child.cancel = isinstance(caps, dict) and isinstance(caps.get("cancel"), dict)
        if "state" in raw:
            state = raw["state"]
            word = state.get("state") if isinstance(state, dict) else None
            child.state = word[:80] if isinstance(word, str) else None
