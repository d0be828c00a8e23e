"""A replay agent: any silo_nb journal played back as a real ACP agent, for teaching and for demos.

``python -m silo_nb.replay_agent JOURNAL [--speed S] [--state-dir DIR]`` serves newline-delimited
JSON-RPC on stdio; :func:`serve` runs it in-process on two anyio byte streams (tests, ``InProcessTransport``).
A profile with ``replay = "<journal>"`` runs it, as does ``%silo connect --replay SESSION_ID``.

- ``recording.py`` reads the journal (the client's own reader and turn splitter: ``sessions.journal``,
  ``sessions.journal_turns``); ``player.py`` answers the ACP methods (see its notes: pace, permissions
  asked again, a different answer ends the replay); ``std_streams.py`` is the process's stdin/stdout.
- The JSON-RPC peer is the client's own (``acp.jsonrpc``): a replay speaks the wire exactly as the agents
  silo_nb talks to, and nothing here knows the notebook.
- No key, no network, nothing written but its progress (``--state-dir``, default
  ``$SILO_NB_REPLAY_STATE_DIR`` or the user's ``<data dir>/agents/replay``: ``user_dirs.py``), so a
  resumed session goes on.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from anyio.abc import ByteReceiveStream, ByteSendStream

from silo_nb.acp import JsonRpcConnection
from silo_nb.replay_agent.player import ReplayAgent
from silo_nb.replay_agent.recording import read_recording
from silo_nb_agents.user_dirs import agent_state_dir

__all__ = ["main", "parse_args", "serve"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise ValueError(f"{self.prog}: {message}")


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = _Parser(prog="python -m silo_nb.replay_agent", description=__doc__.splitlines()[0])
    parser.add_argument("journal", type=Path, help="the journal to play back (a .jsonl file)")
    parser.add_argument("--speed", type=float, default=1.0, help="times faster than recorded (0: no pauses)")
    default_state = os.environ.get("SILO_NB_REPLAY_STATE_DIR") or str(agent_state_dir("replay"))
    parser.add_argument("--state-dir", type=Path, default=Path(default_state), help="where progress is kept")
    return parser.parse_args(list(argv))


async def serve(stdin: ByteReceiveStream, stdout: ByteSendStream, argv: Sequence[str]) -> None:
    """Play the recording ``argv`` names on these streams until the client closes them (a bad argument
    or journal: ``ValueError``); ``stdout`` is closed at the end, as a process's would be."""
    import anyio

    args = parse_args(argv)
    agent = ReplayAgent(read_recording(args.journal), speed=args.speed, state_dir=args.state_dir)
    requests, notifications = agent.handlers()
    connection = JsonRpcConnection(
        stdin, stdout, request_handlers=requests, notification_handlers=notifications
    )
    agent.connection = connection
    try:
        await connection.run()
    finally:
        with anyio.CancelScope(shield=True):
            await agent.aclose()
            await stdout.aclose()


def main(argv: Sequence[str] | None = None) -> int:
    """The process entry point: serve stdin/stdout until stdin ends; 2 for a bad argument, 130 on Ctrl-C."""
    import asyncio

    from silo_nb.replay_agent.std_streams import open_stdio

    arguments = sys.argv[1:] if argv is None else list(argv)
    try:
        read_recording(parse_args(arguments).journal)  # say a bad journal before any protocol line
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    async def run() -> None:
        stdin, stdout = await open_stdio()
        await serve(stdin, stdout, arguments)

    try:
        # A process of its own (not the kernel), so it owns its event loop.
        with asyncio.Runner() as runner:
            runner.run(run())
    except KeyboardInterrupt:
        return 130
    return 0
