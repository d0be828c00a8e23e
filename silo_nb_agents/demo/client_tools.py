"""What the demo agent asks of the client, when the client offers it (its ``initialize`` capabilities):
files (``fs/read_text_file``, ``fs/write_text_file``), a terminal (``terminal/*``) and a question
(``elicitation/create`` in form mode); whether it shows subagents (``subagents``, ACP v1.25 unstable: only
then does the demo agent send ``subagent_update`` and a child's traffic).

- Without the capability the demo agent does the work itself (reads and writes ``notes.md`` directly) or
  says it cannot (no terminal, no question): what a real agent does with a client that offers less.
- Each call answers ``(result, problem)``: a client error becomes a one-line problem the turn says aloud.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Protocol

from silo_nb_agents.demo.rpc_endpoint import RESOURCE_NOT_FOUND, JsonObject

__all__ = ["ClientTools", "Peer"]


class Peer(Protocol):
    """What a script needs of the connection."""

    async def notify(self, method: str, params: JsonObject) -> None: ...

    async def request(self, method: str, params: JsonObject) -> asyncio.Future[JsonObject]: ...


def _enabled(value: Any) -> bool:
    return value is True or isinstance(value, dict)


@dataclass(frozen=True)
class ClientTools:
    """The client's offer, read from ``clientCapabilities``."""

    fs_read: bool = False
    fs_write: bool = False
    terminal: bool = False
    questions: bool = False
    notices: bool = False  # ACP v1.25 session.notices: a notice instead of a bold line in the reply
    compaction: bool = False  # ACP v1.25 session.compaction: compaction_* updates instead of a message
    subagents: bool = False

    @classmethod
    def from_capabilities(cls, capabilities: Any) -> ClientTools:
        caps: dict[str, Any] = capabilities if isinstance(capabilities, dict) else {}
        fs: dict[str, Any] = caps["fs"] if isinstance(caps.get("fs"), dict) else {}
        asks: dict[str, Any] = caps["elicitation"] if isinstance(caps.get("elicitation"), dict) else {}
        session: dict[str, Any] = caps["session"] if isinstance(caps.get("session"), dict) else {}
        return cls(
            fs_read=fs.get("readTextFile") is True,
            fs_write=fs.get("writeTextFile") is True,
            terminal=caps.get("terminal") is True,
            questions=_enabled(asks.get("form")),
            notices=_enabled(session.get("notices")),
            compaction=_enabled(session.get("compaction")),
            subagents=isinstance(caps.get("subagents"), dict),
        )

    @staticmethod
    async def call(peer: Peer, method: str, params: JsonObject) -> tuple[Any, JsonObject | None]:
        """(result, error) of one request to the client."""
        response = await (await peer.request(method, params))
        error = response.get("error")
        return response.get("result"), error if isinstance(error, dict) else None

    async def read(self, peer: Peer, session_id: str, path: str) -> tuple[str | None, str | None]:
        """(text, problem): text None when the file does not exist."""
        result, error = await self.call(peer, "fs/read_text_file", {"sessionId": session_id, "path": path})
        if error is not None:
            if error.get("code") == RESOURCE_NOT_FOUND:
                return None, None
            return None, f"the client would not read it: {error.get('message')}"
        content = result.get("content") if isinstance(result, dict) else None
        return (content, None) if isinstance(content, str) else (None, "the client sent no content")

    async def write(self, peer: Peer, session_id: str, path: str, text: str) -> str | None:
        """None when written, else why not (one line)."""
        params = {"sessionId": session_id, "path": path, "content": text}
        _, error = await self.call(peer, "fs/write_text_file", params)
        return None if error is None else f"the client would not write it: {error.get('message')}"

    async def start(
        self, peer: Peer, session_id: str, command: str, args: list[str]
    ) -> tuple[str | None, str | None]:
        """(terminal id, problem) of a command started in a client terminal."""
        params = {"sessionId": session_id, "command": command, "args": args, "outputByteLimit": 65536}
        result, error = await self.call(peer, "terminal/create", params)
        if error is not None:
            return None, f"the client would not run it: {error.get('message')}"
        terminal_id = result.get("terminalId") if isinstance(result, dict) else None
        return (terminal_id, None) if isinstance(terminal_id, str) else (None, "the client made no terminal")

    async def finish(self, peer: Peer, session_id: str, terminal_id: str) -> tuple[str, Any]:
        """(output, exit status) once the command ends; the terminal is released."""
        ids = {"sessionId": session_id, "terminalId": terminal_id}
        status, _ = await self.call(peer, "terminal/wait_for_exit", ids)
        output, _ = await self.call(peer, "terminal/output", ids)
        await self.call(peer, "terminal/release", ids)
        text = output.get("output") if isinstance(output, dict) else ""
        return (text if isinstance(text, str) else ""), status

    async def ask(
        self, peer: Peer, session_id: str, message: str, schema: JsonObject, tool_call_id: str | None
    ) -> tuple[str, JsonObject]:
        """(``accept``/``decline``/``cancel``, the values) of a form question."""
        params: JsonObject = {
            "sessionId": session_id,
            "mode": "form",
            "message": message,
            "requestedSchema": schema,
        }
        if tool_call_id is not None:
            params["toolCallId"] = tool_call_id
        result, error = await self.call(peer, "elicitation/create", params)
        if error is not None or not isinstance(result, dict):
            return "cancel", {}
        content = result.get("content")
        return str(result.get("action") or "cancel"), content if isinstance(content, dict) else {}
