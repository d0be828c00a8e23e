"""A deterministic, scripted ACP v1 agent: ``python -m silo_nb_agents.demo [flags]``, or ``serve`` in-process.

It exists so that every part of a client can be exercised with no keys and no network: streamed thoughts
and Markdown, tool calls with diffs, permission requests, plans, titles, usage, slash commands, config
options, load/resume/list across processes, and errors.

Design:

- One core, two ways in. ``main`` (the subprocess behind the built-in ``demo`` profile) adapts stdin/stdout
  (stdio.py) and ``serve`` adapts two anyio byte streams, both to the same reader/writer pair handed to
  ``run_agent`` (agent.py). ``serve`` runs on the caller's event loop (asyncio), with no thread, so tests
  can talk to the agent in-process through memory streams.
- Layers, each importing only those before it: rpc_endpoint.py (newline-delimited JSON-RPC 2.0: framing,
  dispatch, the one writer) → session_store.py (sessions and their files in ``--state-dir``), notes.py (the
  ``notes.md`` it really edits) → scripted_turns.py (the scripted turns) → agent.py (the ACP methods) →
  options.py/stdio.py/this module (entry points).
- The edit turn does what it says: an allowed edit appends a line to ``notes.md`` in the session's working
  directory, a rejected one leaves it untouched, so a permission has a visible effect.
- Standard library only and nothing else from ``silo_nb`` (it shares nothing with the client), so the
  subprocess starts fast; anyio is imported inside ``serve`` only. Debug logs (``SILO_NB_DEMO_DEBUG=1``)
  go to stderr; stdout carries nothing but protocol lines.
- Every agent (each ``serve`` call, each process) has its own state; two agents share only the session
  files of ``--state-dir``, which is how ``session/load``, ``resume`` and ``list`` work across them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from silo_nb_agents.demo.agent import run_agent
from silo_nb_agents.demo.options import Options, parse_args

if TYPE_CHECKING:
    from anyio.abc import ByteReceiveStream, ByteSendStream

__all__ = ["main", "serve"]


async def serve(receive: ByteReceiveStream, send: ByteSendStream, argv: Sequence[str] = ()) -> None:
    """Be the demo agent on two byte streams, in this event loop (asyncio), until ``receive`` ends.

    ``receive`` carries what the client writes (the agent's stdin), ``send`` what the agent writes (its
    stdout). ``argv`` takes the command-line flags (defaults from the ``SILO_NB_DEMO_*`` variables); a bad
    flag raises ``ValueError``. At end of stream the turns still running are cancelled, ``send`` is closed
    (as a process's stdout closes when it exits) and ``serve`` returns; an error reading ``receive`` other
    than its end is raised, after the same clean-up. ``receive`` stays the caller's to close.
    """
    import anyio

    options = parse_args(argv, exit_on_error=False)

    async def read() -> bytes:
        try:
            return await receive.receive()
        except anyio.EndOfStream:
            return b""

    async def write(data: bytes) -> None:
        try:
            await send.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise ConnectionError("the client no longer reads the agent's output") from exc

    try:
        await run_agent(options, read, write)
    finally:
        with anyio.CancelScope(shield=True), contextlib.suppress(anyio.BrokenResourceError):
            await send.aclose()


async def _serve_stdio(options: Options) -> None:
    from silo_nb_agents.demo.stdio import open_stdin, write_stdout

    await run_agent(options, await open_stdin(), write_stdout)


def main(argv: Sequence[str] | None = None) -> int:
    """The process entry point: serve stdin/stdout until stdin ends; 0, or 130 on Ctrl-C."""
    options = parse_args(argv)
    try:
        # A process of its own (not the kernel), so it owns its event loop.
        with asyncio.Runner() as runner:
            runner.run(_serve_stdio(options))
    except KeyboardInterrupt:
        return 130
    return 0
