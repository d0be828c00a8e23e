"""Hypothesis strategies for what an agent can send: JSON values, ACP updates, hostile text, byte streams.

- ``json_values``: any value ``json.loads`` can return (``NaN``/``Infinity`` too: Python's json accepts
  them from the wire, so an agent can send them).
- ``hostile_text``: agent text built from pieces that matter to Markdown and HTML (tags, event
  attributes, link syntax with unsafe schemes, entities, fences, indentation, lone surrogates) mixed
  with arbitrary characters.
- ``wire_updates``: ``session/update`` ``update`` objects of every kind the reducer knows, with fields
  that are right, wrong-typed or missing, plus wholly arbitrary objects; small id pools so chunks join,
  tool calls upsert and permissions are decided.
- ``within(seconds)``: a hang guard for one example (SIGALRM).
- ``examples(n)``: ``n`` under the deterministic ``ci`` profile, ``10 n`` under ``explore``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

from silo_nb.model.kinds import SILO_NB_KINDS
from silo_nb.model.models import AgentSessionUpdate
from silo_nb.sessions.journal import journal_line_to_update
from silo_nb.updates.parse import parse_update

__all__ = ["examples", "hostile_text", "json_line", "json_values", "wire_updates", "within"]


def examples(n: int) -> int:
    return n * 10 if os.environ.get("HYPOTHESIS_PROFILE") == "explore" else n


_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)
json_values: st.SearchStrategy[Any] = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)

HOSTILE_PIECES = [
    "<script>alert(1)</script>",
    "<script",
    "</script>",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    '<a href="javascript:alert(1)">',
    "<iframe src=javascript:alert(1)>",
    "<div>",
    "</div>",
    "<b onclick=alert(1)>",
    " onmouseover=alert(1) ",
    "javascript:alert(1)",
    "JaVaScRiPt:",
    "vbscript:",
    "data:text/html,<script>",
    "java&#115;cript:",
    "&#58;",
    "&#x3a;",
    "&lt;",
    "&",
    "[x](",
    "](",
    "[r]: ",
    "[",
    "]",
    "(",
    ")",
    "<",
    ">",
    "<http://x.y>",
    "<javascript:x>",
    "<mailto:a@b>",
    "`",
    "``",
    "```",
    "~~~",
    "\n",
    "\n\n",
    "    ",
    "\t",
    "> ",
    "- ",
    "1. ",
    "# ",
    "| a | b |\n|---|---|\n",
    "|",
    "*",
    "**",
    "_",
    "\\",
    '"',
    "'",
    "=",
    "<!--",
    "-->",
    "<?php ",
    "<![CDATA[",
    "\x00",
    "\u2028",
    "\ud800",
    "é",
    "😀",
]
hostile_text: st.SearchStrategy[str] = st.lists(
    st.sampled_from(HOSTILE_PIECES) | st.text(max_size=6), max_size=14
).map("".join)

_ids = st.sampled_from(["a", "b", "c"]) | st.text(max_size=4)
_maybe_text = st.none() | hostile_text | json_values


def _block() -> st.SearchStrategy[Any]:
    text_block = st.fixed_dictionaries({"type": st.just("text"), "text": hostile_text})
    image = st.fixed_dictionaries(
        {"type": st.just("image"), "data": st.text(max_size=8)},
        optional={
            "mimeType": st.sampled_from(["image/png", "image/svg+xml", "text/html"]),
        },
    )
    link = st.fixed_dictionaries(
        {"type": st.just("resource_link"), "uri": hostile_text, "name": hostile_text}
    )
    resource = st.fixed_dictionaries(
        {
            "type": st.just("resource"),
            "resource": st.fixed_dictionaries(
                {"uri": hostile_text}, optional={"text": hostile_text, "mimeType": st.text(max_size=10)}
            ),
        }
    )
    return text_block | text_block | image | link | resource | json_values


def _tool_content() -> st.SearchStrategy[Any]:
    content = st.fixed_dictionaries({"type": st.just("content"), "content": _block()})
    diff = st.fixed_dictionaries(
        {"type": st.just("diff"), "path": hostile_text, "newText": hostile_text},
        optional={"oldText": st.none() | hostile_text},
    )
    terminal = st.fixed_dictionaries({"type": st.just("terminal"), "terminalId": st.text(max_size=6)})
    return content | diff | terminal | json_values


_TOOL_KINDS = ["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]
_STATUSES = ["pending", "in_progress", "completed", "failed"]


def _tool_call(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"sessionUpdate": st.just(kind), "toolCallId": _ids},
        optional={
            "title": _maybe_text,
            "kind": st.sampled_from(_TOOL_KINDS) | json_values,
            "status": st.sampled_from(_STATUSES) | json_values,
            "content": st.lists(_tool_content(), max_size=3) | json_values,
            "locations": st.lists(
                st.fixed_dictionaries({"path": hostile_text}, optional={"line": json_values}), max_size=2
            )
            | json_values,
            "rawInput": json_values,
            "rawOutput": json_values,
        },
    )


def _text_chunk(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"sessionUpdate": st.just(kind), "content": _block()}, optional={"messageId": _ids | json_values}
    )


_plan = st.fixed_dictionaries(
    {
        "sessionUpdate": st.just("plan"),
        "entries": st.lists(
            st.fixed_dictionaries(
                {"content": hostile_text},
                optional={
                    "priority": st.sampled_from(["high", "medium", "low"]) | json_values,
                    "status": st.sampled_from(_STATUSES) | json_values,
                },
            )
            | json_values,
            max_size=3,
        )
        | json_values,
    }
)
_usage = st.fixed_dictionaries(
    {"sessionUpdate": st.just("usage_update")},
    optional={
        "used": json_values,
        "size": json_values,
        "cost": st.fixed_dictionaries({"amount": json_values, "currency": _maybe_text}) | json_values,
    },
)
_info = st.fixed_dictionaries(
    {"sessionUpdate": st.just("session_info_update")}, optional={"title": _maybe_text}
)
_options = st.lists(
    st.fixed_dictionaries({"optionId": _ids, "name": hostile_text, "kind": st.text(max_size=12)})
    | json_values,
    max_size=3,
)
_permission = st.fixed_dictionaries(
    {"sessionUpdate": st.sampled_from(["permission_request", "permission_decision"])},
    optional={
        "requestId": _ids | json_values,
        "toolCallId": _ids,
        "title": _maybe_text,
        "options": _options | json_values,
        "optionId": _ids | json_values,
    },
)
_metadata = st.fixed_dictionaries(
    {
        "sessionUpdate": st.sampled_from(
            ["available_commands_update", "current_mode_update", "config_option_update"]
        )
    },
    optional={"availableCommands": json_values, "currentModeId": json_values, "configOptions": json_values},
)
_arbitrary = st.dictionaries(st.text(max_size=10), json_values, max_size=5).map(
    lambda d: {"sessionUpdate": "x_unknown", **d}
) | st.dictionaries(st.sampled_from(["sessionUpdate", "content", "toolCallId"]), json_values, max_size=3)

wire_updates: st.SearchStrategy[dict[str, Any]] = st.one_of(
    _text_chunk("agent_message_chunk"),
    _text_chunk("agent_thought_chunk"),
    _text_chunk("user_message_chunk"),
    _tool_call("tool_call"),
    _tool_call("tool_call_update"),
    _plan,
    _usage,
    _info,
    _permission,
    _metadata,
    _arbitrary,
)


def json_line(value: Any) -> bytes:
    """``value`` as one wire line, the way a careless agent would write it (lone surrogates escaped)."""
    return json.dumps(value, separators=(",", ":")).encode() + b"\n"


@contextlib.contextmanager
def within(seconds: float) -> Iterator[None]:
    """Fail with ``TimeoutError`` if the block runs longer than ``seconds`` (a hang, not just slowness:
    hypothesis's ``deadline`` only judges an example once it has returned). SIGALRM, main thread only."""

    def expired(_signum: int, _frame: Any) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def as_update(wire: dict[str, Any]) -> AgentSessionUpdate | None:
    """A generated wire dict as the session would record it: the session's own kinds (permissions, turn
    ends) never come from the wire, so those are read as their journal lines are."""
    kind = wire.get("sessionUpdate")
    if isinstance(kind, str) and kind in SILO_NB_KINDS:
        return journal_line_to_update({"kind": kind, "raw": wire})
    return parse_update(wire)
