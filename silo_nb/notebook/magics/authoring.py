"""``%silo insert`` and ``%silo add-profile``: the agent's code into a new cell, a profile without TOML.

- ``%silo insert [NAME]``: the last fenced code block of the connection's last turn (read from its
  journal, so a restored session has it too) becomes a new cell below this one (IPython's
  ``set_next_input``: JupyterLab and Notebook 7 insert it; nbclient ignores it). The block's own fence
  language is dropped; a block that is not Python is inserted as it is (the user decides).
- ``%silo add-profile ID COMMAND [ARGS...]`` (``--label``, ``--env KEY=VALUE`` any number of times) writes
  a profile to the user's profiles file (``sessions/profile_writer.py``: validated, never over an id that
  exists, TOML written safely) and says where; ``%silo doctor ID`` checks it.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from IPython.core.error import UsageError

from silo_nb.model import (
    AgentSessionUpdate,
)
from silo_nb.notebook.magics.args import argument, magic_arguments
from silo_nb.notebook.magics.connections import NotebookSession
from silo_nb.sessions import (
    add_profile,
)
from silo_nb.updates import (
    split_turns,
)

__all__ = ["authoring_subcommands", "last_code_block"]

Handler = Callable[[NotebookSession, argparse.Namespace], Awaitable[None]]

# A fenced block: ``` or ~~~ (three or more), an optional info string, the body, the same fence closing.
_FENCE = re.compile(
    r"^(?P<fence>`{3,}|~{3,})[^\n`]*\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.MULTILINE | re.DOTALL
)


def last_code_block(updates: Sequence[AgentSessionUpdate]) -> str | None:
    """The last fenced code block in the agent's reply of the last turn of ``updates``, or None."""
    turns = [turn for turn in split_turns(updates) if turn.number is not None]
    if not turns:
        return None
    reply = "".join(u.text or "" for u in turns[-1].updates if u.kind == "agent_message_chunk")
    blocks = [match.group("body") for match in _FENCE.finditer(reply)]
    return blocks[-1].rstrip("\n") if blocks else None


def authoring_subcommands() -> dict[str, Handler]:
    """The ``insert`` and ``add-profile`` subcommands."""

    @magic_arguments("silo insert")
    @argument("name", nargs="?", metavar="NAME", help="the connection (default: the most recent one)")
    async def _insert(session: NotebookSession, args: argparse.Namespace) -> None:
        """Put the last code block of the last turn into a new cell below this one."""
        connection, handle = await session.handle(args.name)
        code = last_code_block(handle.journal_updates())  # the lines not on disk yet too
        if code is None:
            raise UsageError(
                f"%silo insert: the last turn of {connection.name} has no code block "
                "(a fenced ``` block in the agent's reply)."
            )
        session.shell.set_next_input(code)
        lines = code.count("\n") + 1
        print(f"inserted {lines} line{'s' if lines != 1 else ''} from {connection.name}'s last turn below")

    @magic_arguments("silo add-profile")
    @argument("--label", metavar="LABEL", help="how the profile is shown (default: its id)")
    @argument("--env", action="append", default=[], metavar="KEY=VALUE", help="a variable for the agent")
    @argument("profile", metavar="ID", help="the new profile's id (a-z, 0-9 and -)")
    @argument("command", metavar="COMMAND", help="the agent's program (a name on PATH, or a path)")
    @argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="the program's arguments")
    async def _add_profile(session: NotebookSession, args: argparse.Namespace) -> None:
        """Add a profile to your profiles file (checked; never over an existing id)."""
        entry: dict[str, Any] = {"id": args.profile}
        if args.label:
            entry["label"] = args.label
        entry["command"] = args.command
        if args.args:
            entry["args"] = list(args.args)
        env: dict[str, str] = {}
        for pair in args.env:
            key, sep, value = pair.partition("=")
            if not sep or not key:
                raise UsageError(f"%silo add-profile: --env {pair!r} is not KEY=VALUE.")
            env[key] = value
        if env:
            entry["env"] = env
        before = session.service.profiles.origin(args.profile)
        try:
            path = add_profile(session.service.profiles, entry)
        except ValueError as exc:
            raise UsageError(f"%silo add-profile: {exc}") from None
        replaces = f" (it replaces the site's, {before.source.path})" if before is not None else ""
        print(f"added profile {args.profile} to {path}{replaces} — check it with %silo doctor {args.profile}")

    return {"insert": _insert, "add-profile": _add_profile}
