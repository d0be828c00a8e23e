"""What can still be known of a line the reader drops (nested too deep, longer than the line limit, not
JSON): its top-level ``id`` and ``method``, so that a request is answered with an error instead of never
(the agent would wait forever), and an answer to one of our requests fails that request.

- Only the top level, and only where it is certain: from the line's start, the members before the first
  container value (``{"jsonrpc":"2.0","id":7,"method":"x","params":[…``); from its end, the members
  after the last one (``…]],"id":7}``: the final ``}`` closes the outermost object, so what sits right
  before it is that object's). A key whose value is a container is noted from the start only.
  An ``id`` deeper in the line is never reached: both scans stop at the first container they meet.
- Bounded: :data:`SCAN_BYTES` from each end, a few regular-expression matches; never a parse of the line.
- Nothing is salvaged when the ends disagree (two different ids), when the id is not an integer or a
  string, or when neither a ``method`` (a request) nor a ``result``/``error`` key (a response) is seen.

:func:`answer_dropped` acts on it for :mod:`silo_nb.acp.jsonrpc`: a request is answered -32600 (too deep,
too long) or -32700 (unreadable: not JSON, not UTF-8, a number past the digit limit), naming why; our
request whose answer was dropped fails with the same.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from silo_nb.acp.framing import TooDeepError
from silo_nb.acp.pending import PendingRequest
from silo_nb.acp.rpc_errors import INVALID_REQUEST, PARSE_ERROR, AcpRpcError

__all__ = ["SCAN_BYTES", "Salvaged", "answer_dropped", "salvage", "why_dropped"]

SCAN_BYTES = 4096
MAX_MEMBERS = 8  # from each end: a JSON-RPC message has four top-level keys; this bounds a hostile line

_WS = rb"[ \t\r\n]*"
_STRING = rb'"(?:[^"\\]|\\.)*"'
_SCALAR = rb"(?:" + _STRING + rb"|-?[0-9][0-9.eE+-]*|true|false|null)"
# From the start: one member, its value a scalar followed by "," or "}", or the opening of a container.
_HEAD_MEMBER = re.compile(
    _WS + rb"(" + _STRING + rb")" + _WS + rb":" + _WS + rb"(?:(" + _SCALAR + rb")" + _WS + rb"([,}])|[\[{])",
    re.DOTALL,
)
# From the end: the last member before the given end, with the "," or "{" before it.
_TAIL_MEMBER = re.compile(
    rb"([,{])" + _WS + rb"(" + _STRING + rb")" + _WS + rb":" + _WS + rb"(" + _SCALAR + rb")" + _WS + rb"\Z",
    re.DOTALL,
)
_CONTAINER = object()  # a key whose value is an array or an object


class Salvaged(NamedTuple):
    """The top-level facts of a dropped line."""

    id: int | str
    method: str | None  # a request when set
    is_response: bool  # a top-level ``result`` or ``error`` key was seen


def salvage(head: bytes, tail: bytes) -> Salvaged | None:
    """What the start ``head`` and the end ``tail`` of one dropped line say for certain (see the module
    docstring); ``None`` when it is not a request or response whose id is known."""
    members = _head(head[:SCAN_BYTES])
    for key, value in _tail(tail[-SCAN_BYTES:]):
        if key in members and members[key] != value:
            return None  # the ends disagree: not one certain message
        members[key] = value
    request_id, method = members.get("id"), members.get("method")
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
        return None  # true, 1.5, null, an object: not an id this client could answer by
    is_response = "result" in members or "error" in members
    if not isinstance(method, str):
        return Salvaged(request_id, None, True) if is_response and "method" not in members else None
    return Salvaged(request_id, method, False)


def why_dropped(cause: Exception | int) -> tuple[int, str]:
    """The error code and reason for a line dropped by ``cause``: its decoding error, or the line limit
    (in bytes) it went over."""
    if isinstance(cause, int):
        return INVALID_REQUEST, f"longer than {cause:,} bytes"
    if isinstance(cause, TooDeepError):
        return INVALID_REQUEST, str(cause)
    return PARSE_ERROR, f"not readable as JSON ({type(cause).__name__}: {str(cause)[:80]})"


def answer_dropped(
    start: bytes,
    end: bytes,
    why: tuple[int, str],
    reply_error: Callable[[Any, AcpRpcError], None],
    pending: Mapping[int, PendingRequest],
) -> None:
    """Answer the request a dropped line was (``reply_error``), or fail the one of ours (``pending``) it
    answered, when :func:`salvage` can tell which; else nothing (the reader has logged the line)."""
    if (found := salvage(start, end)) is None:
        return
    code, reason = why
    if found.method is not None:
        message = f"the client dropped this request: {reason}"
        reply_error(found.id, AcpRpcError(code, message, {"method": found.method[:200]}))
    elif type(found.id) is int and (call := pending.get(found.id)) is not None and not call.done.is_set():
        call.error = AcpRpcError(code, f"the agent's answer was dropped: {reason}")
        call.done.set()


def _head(head: bytes) -> dict[str, Any]:
    members: dict[str, Any] = {}
    opening = head.lstrip()
    if not opening.startswith(b"{"):
        return members  # a batch or not an object: nothing to answer
    pos = len(head) - len(opening) + 1
    while len(members) < MAX_MEMBERS and (match := _HEAD_MEMBER.match(head, pos)) is not None:
        key = _decode(match[1])
        if not isinstance(key, str):
            break
        if match[2] is None:
            members[key] = _CONTAINER
            break
        members[key] = _decode(match[2])
        if match[3] == b"}":
            break
        pos = match.end()
    return members


def _tail(tail: bytes) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    text = tail.rstrip()
    if not text.endswith(b"}"):
        return found
    end = len(text) - 1
    while len(found) < MAX_MEMBERS and (match := _TAIL_MEMBER.search(text, 0, end)) is not None:
        key = _decode(match[2])
        if not isinstance(key, str):
            break
        found.append((key, _decode(match[3])))
        if match[1] == b"{":
            break  # the outermost object's first member: all of it has been read
        end = match.start()
    return found


def _decode(token: bytes) -> Any:
    try:
        return json.loads(token)
    except ValueError:  # a number the loose pattern took that JSON does not (1e, --1): not certain
        return _CONTAINER
