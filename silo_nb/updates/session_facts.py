"""What a journal has said about its session so far — the one fold of session facts every reader uses
(``silo_nb.frame``'s rows, the agents list's summaries): the mode and config values, the title, the
profile and agent of the last turn end, and when it last did something.

Fed the updates in journal order (``apply``); a reader may feed only the lines it needs (the agents list
parses only the lines that can change what it shows). Absent or malformed fields change nothing, and
neither does a subagent's update (``child_session_id``: its title and options are the child's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from silo_nb.model import (
    USER_PROMPT_KIND,
    AgentSessionUpdate,
    TurnEndLine,
)
from silo_nb.updates.parse import parse_config_options, session_title

__all__ = ["SessionFacts"]

_MODE_KEYS = ("currentModeId", "currentValue", "modeId")


@dataclass
class SessionFacts:
    """The session as its journal describes it up to the last update applied."""

    config: dict[str, Any] = field(default_factory=dict)  # option id -> value ("mode" included)
    title: str | None = None
    profile: str | None = None
    agent: str | None = None
    last_time: str | None = None  # the last turn's end, or the last prompt's time
    prompts: int = 0  # prompts the user sent (silo_nb's synthesized prompt lines)

    def apply(self, update: AgentSessionUpdate) -> None:
        if update.child_session_id is not None:
            return  # a subagent's mode, options and title are its own (ACP v1.25)
        kind, raw = update.kind, update.raw
        if kind == "current_mode_update":
            mode = next((raw[k] for k in _MODE_KEYS if raw.get(k)), None)
            if isinstance(mode, str):
                self.config["mode"] = mode
        elif kind == "config_option_update":
            for option in parse_config_options(raw.get("configOptions")):
                self.config[option.id] = option.current_value
        elif kind == "session_info_update":
            self.title = session_title(update) or self.title
        elif (end := TurnEndLine.read(update)) is not None:
            self.config.update(end.config or {})
            self.profile = end.profile or self.profile
            self.agent = end.agent or self.agent
            self.last_time = end.ended_at or self.last_time
        elif kind == USER_PROMPT_KIND and raw.get("synthesized") is True:
            self.prompts += 1
            self.last_time = update.timestamp or self.last_time
