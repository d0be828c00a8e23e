"""What an agent says of its own sign-in, without a prompt: ACP's ``auth/status`` (v1.25, unstable; asked
where ``agentCapabilities.auth.status`` is offered) and the pushes ``auth/status_update`` (same shape) and
``_auth/status_update`` (the extension claude-agent-acp and codex-acp send, advertised as
``agentCapabilities._meta.authStatus``: ``{authStatus: {kind, label, detail, account}}``).

- :func:`parse_auth_status` reads either shape into one :class:`AgentAuthStatus` (None for neither);
  strings are cut to :data:`MAX_FIELD_CHARS` and at most :data:`MAX_ACCOUNTS` accounts are kept.
- :meth:`AgentAuthStatus.line` is ``%silo doctor``'s ``signed in: yes (Claude Max, …)``. ACP asks clients
  not to log the account fields: they are only shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_ACCOUNTS", "MAX_FIELD_CHARS", "AgentAuthStatus", "parse_auth_status"]

MAX_ACCOUNTS = 10
MAX_FIELD_CHARS = 200
_STATES = ("authenticated", "unauthenticated", "not_required", "unknown")


def _text(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    text = " ".join(value.split())
    return text if len(text) <= MAX_FIELD_CHARS else text[: MAX_FIELD_CHARS - 1] + "…"


@dataclass(frozen=True)
class AgentAuthStatus:
    """``state``: authenticated, unauthenticated, not_required or unknown (ACP: an unknown word is
    unknown); ``accounts``: one display line per account the agent reports."""

    state: str
    accounts: tuple[str, ...] = ()

    @property
    def signed_in(self) -> bool | None:
        return {"authenticated": True, "unauthenticated": False}.get(self.state)

    def line(self) -> str:
        word = {
            "authenticated": "yes",
            "unauthenticated": "no",
            "not_required": "not needed",
        }.get(self.state, "unknown")
        accounts = f" ({'; '.join(self.accounts)})" if self.accounts else ""
        return f"signed in: {word}{accounts}"


def _account_line(account: Mapping[str, Any]) -> str | None:
    parts = [_text(account.get(key)) for key in ("label", "name", "email", "organization")]
    line = ", ".join(part for part in parts if part)
    if not line:
        return None
    return line + (" — active" if account.get("active") is True else "")


def parse_auth_status(params: Any) -> AgentAuthStatus | None:
    """An ``auth/status`` answer or either push's params, as one status; None when it is neither."""
    if not isinstance(params, Mapping):
        return None
    pushed = params.get("authStatus")
    if isinstance(pushed, Mapping):  # the _auth/status_update extension
        kind = pushed.get("kind")
        if not isinstance(kind, str):
            return None
        found = pushed.get("account")
        account: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        parts = [_text(pushed.get("label")), _text(pushed.get("detail")) or _text(account.get("email"))]
        parts.append(_text(account.get("organization")))
        line = ", ".join(part for part in parts if part)
        state = "unauthenticated" if kind == "none" else "authenticated"
        return AgentAuthStatus(state, (line,) if line and kind != "none" else ())
    said = params.get("state")
    if not isinstance(said, str):
        return None
    accounts = params.get("accounts")
    lines = [
        shown
        for account in (accounts if isinstance(accounts, list) else [])[:MAX_ACCOUNTS]
        if isinstance(account, Mapping) and (shown := _account_line(account)) is not None
    ]
    return AgentAuthStatus(said if said in _STATES else "unknown", tuple(lines))
