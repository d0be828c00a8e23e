"""Secrets kept out of what is shown: a profile's ``repr`` and its MCP servers', ``%silo doctor``'s lines.

Only display paths call these; what is saved or sent (``model_dump``, the agent's argv and environment,
ACP's ``mcpServers``) keeps the real values.

- :func:`redact_url`: a URL's credentials (``https://user:password@host``) and the values of query
  parameters named like secrets (``?token=…``, ``api_key=…``) become ``***``.
- :func:`redact_args`: in a command's arguments, the value of a flag named like a secret (``--token X``,
  ``--api-key=X``), of an environment-style ``NAME=VALUE`` pair (or ``api_key=X``), of a header named like one
  (``Authorization: Bearer X``), the credentials of a URL, and any long random-looking word (``sk-…``,
  40 hex digits, a mixed-case-and-digits run of 20+) become ``***``; the rest stays as written, so the
  command is still readable (``npx -y @scope/server --port 8080``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["MASK", "masked_values", "redact_args", "redact_url"]

MASK = "***"

# A flag, query parameter or header whose name holds one of these words carries a secret.
_SECRET_NAME = re.compile(r"token|secret|passw|pwd|key|auth|credential|bearer|cookie|signature", re.I)
_URL_USERINFO = re.compile(r"(?<=://)[^/?#@\s]+@")
_QUERY_PAIR = re.compile(r"([?&;])([^=&#;]*)=([^&#;]*)")
_FLAG_VALUE = re.compile(r"^(--?[A-Za-z0-9][A-Za-z0-9_.-]*)=(.*)$", re.S)
_PAIR = re.compile(r"^([A-Za-z_][A-Za-z0-9_.-]*)=(.+)$", re.S)
_HEADER = re.compile(r"^([A-Za-z][A-Za-z0-9-]*):\s*(.+)$", re.S)
_WORD = re.compile(r"[A-Za-z0-9_+=-]{20,}")
_HEX = re.compile(r"[0-9a-fA-F]{32,}")
_KNOWN_PREFIXES = (
    "sk-",
    "ghp_",
    "gho_",
    "ghs_",
    "ghu_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "AKIA",
    "AIza",
)


def redact_url(url: str) -> str:
    """``url`` without its credentials and secret-named query values (see the module docstring)."""
    url = _URL_USERINFO.sub(MASK + "@", url)
    if "?" not in url:
        return url

    def pair(match: re.Match[str]) -> str:
        separator, name, value = match.groups()
        return f"{separator}{name}={MASK if value and _SECRET_NAME.search(name) else value}"

    head, _, rest = url.partition("?")
    return head + _QUERY_PAIR.sub(pair, "?" + rest)


def _looks_random(word: str) -> bool:
    if len(word) >= 16 and word.startswith(_KNOWN_PREFIXES):
        return True
    if _HEX.fullmatch(word):
        return True
    if not _WORD.fullmatch(word):
        return False
    # A secret mixes cases and digits; a model name (claude-3-5-sonnet-20241022) or a word does not.
    return (
        any(c.isupper() for c in word) and any(c.islower() for c in word) and any(c.isdigit() for c in word)
    )


def _redact_one(arg: str) -> str:
    if flag := _FLAG_VALUE.match(arg):
        name, value = flag.groups()
        return f"{name}={MASK}" if _SECRET_NAME.search(name) and value else f"{name}={_redact_one(value)}"
    if (pair := _PAIR.match(arg)) and (pair[1].isupper() or _SECRET_NAME.search(pair[1])):
        return f"{pair[1]}={MASK}"  # an environment variable's value, or a secret-named setting's
    if (header := _HEADER.match(arg)) and _SECRET_NAME.search(header[1]):
        return f"{header[1]}: {MASK}"
    if _looks_random(arg):
        return MASK
    return redact_url(arg) if "://" in arg else arg


def redact_args(args: Iterable[str]) -> tuple[str, ...]:
    """``args`` as they may be shown: secret-looking values replaced by ``***``."""
    shown: list[str] = []
    secret_next = False  # the previous argument was a flag named like a secret: this is its value
    for arg in args:
        if secret_next and not arg.startswith("-"):
            shown.append(MASK)
            secret_next = False
            continue
        secret_next = arg.startswith("-") and "=" not in arg and bool(_SECRET_NAME.search(arg))
        shown.append(_redact_one(arg))
    return tuple(shown)


def masked_values(mapping: Mapping[str, Any]) -> dict[str, str]:
    """``mapping``'s keys, every value ``***`` (an env or a header set: any of them may be a secret)."""
    return dict.fromkeys(mapping, MASK)
