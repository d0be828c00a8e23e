"""Lenient parsing of agent traffic into silo_nb's models (Silo's parse rules): the one place to import from.

- ``fields.py``: the one field parser (content blocks, tool calls, locations, plans, usage), which the
  wire parser and the journal reader (``sessions/journal``'s ``journal_line_to_update``) both use.
- ``wire_update.py``: a ``session/update`` to an ``AgentSessionUpdate`` (hot), message ids
  (:class:`MessageIdSynthesizer`: ``silo-msg-<n>`` per run of same-kind text chunks when the agent sends
  none), and the bounds on agent values (``MAX_RAW_DEPTH`` levels, ``MAX_FIELD_CHARS`` characters).
- ``controls.py``: commands, config options, permission options, session summaries, the title rule.
- Nothing here raises on agent data: a malformed optional field becomes absent, an invalid list item is
  dropped, unknown kinds/types/statuses/categories are kept as open strings.
"""

from __future__ import annotations

from typing import Any

from silo_nb.model import (
    METADATA_KINDS,
    TEXT_KINDS,
    AgentToolCall,
)
from silo_nb.updates.parse.controls import (
    parse_commands,
    parse_config_options,
    parse_permission_options,
    parse_session_summary,
    permission_option_fields,
    session_title,
    synthesize_legacy_options,
)
from silo_nb.updates.parse.fields import DEPTH_MARKER, MAX_RAW_DEPTH, tool_call
from silo_nb.updates.parse.fields import content_block as parse_content_block
from silo_nb.updates.parse.fields import plan_entries as parse_plan
from silo_nb.updates.parse.fields import usage as parse_usage
from silo_nb.updates.parse.wire_update import (
    MAX_FIELD_CHARS,
    MessageIdSynthesizer,
    cut_long_strings,
    parse_session_update,
    parse_update,
    parse_wire_update,
)

__all__ = [
    "DEPTH_MARKER",
    "MAX_FIELD_CHARS",
    "MAX_RAW_DEPTH",
    "METADATA_KINDS",
    "TEXT_KINDS",
    "MessageIdSynthesizer",
    "cut_long_strings",
    "parse_commands",
    "parse_config_options",
    "parse_content_block",
    "parse_permission_options",
    "parse_plan",
    "parse_session_summary",
    "parse_session_update",
    "parse_tool_call",
    "parse_update",
    "parse_usage",
    "parse_wire_update",
    "permission_option_fields",
    "session_title",
    "synthesize_legacy_options",
]


def parse_tool_call(value: Any, *, cut: bool = True) -> AgentToolCall | None:
    """A tool call or a patch to one, its ``rawInput``/``rawOutput`` bounded (``cut``) as the wire's are."""
    return tool_call(value, cut=cut)
