"""The client's system prompt (ACP v1.25, unstable ``systemPrompt``): what a session asks, what is sent.

- A session's :class:`SystemPrompt` comes from its profile (``system_prompt``, ``system_prompt_mode``),
  ``connect(system_prompt=..., system_prompt_mode=...)`` (which wins), and, for a session connected from
  a kernel, silo_nb's :data:`NOTEBOOK_GUIDANCE` (``connect(notebook_guidance=True)``; a profile's
  ``notebook_guidance = false`` turns it off).
- :meth:`SystemPrompt.wire` is the ``systemPrompt`` of session/new, load, resume and fork: only for an
  agent that advertises ``sessionCapabilities.systemPrompt``, and ``override`` only where it offers
  ``systemPrompt.mode.override`` (else the user's text is left out, said once in the log; the guidance
  still goes, appended). Nothing is sent when there is nothing to say (ACP forbids an empty array).
- :meth:`SystemPrompt.doctor_line` is ``%silo doctor``'s one line about it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from silo_nb.sessions.capabilities import AgentCapabilities

__all__ = ["NOTEBOOK_GUIDANCE", "SystemPrompt", "SystemPromptMode"]

SystemPromptMode = Literal["append", "override"]

NOTEBOOK_GUIDANCE = (
    "You are working inside a Jupyter notebook through silo_nb. The notebook is open in the user's "
    "browser and its kernel is live. Use the notebook tools of the `notebook` MCP server to read and "
    "change it: read_notebook and read_cells to see it, insert_cell, edit_cell, replace_cell, delete_cell "
    "and move_cell to change cells, run_cell to run one, run_code to try code in the kernel, "
    "list_variables and inspect_variable to look at its data, show_figure for the last plot. Never write "
    "or edit `.ipynb` files directly (with file-writing tools or shell commands): the open notebook "
    "would overwrite your change, or your write would corrupt it."
)


@dataclass(frozen=True)
class SystemPrompt:
    """What a session asks to send as ``systemPrompt`` (its text, its mode, and the notebook guidance)."""

    text: str | None = None
    mode: SystemPromptMode = "append"
    guidance: str | None = None  # appended after ``text`` (a kernel session's notebook guidance)

    @property
    def asked(self) -> bool:
        return bool(self.text) or bool(self.guidance)

    def refusal(self, caps: AgentCapabilities) -> str | None:
        """Why the user's text is not sent to this agent (None: it is, or there is none)."""
        if not self.text:
            return None
        if not caps.system_prompt:
            return f"{caps.agent_name} does not offer sessionCapabilities.systemPrompt"
        if self.mode == "override" and not caps.system_prompt_override:
            return f"{caps.agent_name} does not offer sessionCapabilities.systemPrompt.mode.override"
        return None

    def wire(self, caps: AgentCapabilities) -> dict[str, Any] | None:
        """The ``systemPrompt`` param for this agent, or None when nothing is to be sent."""
        if not caps.system_prompt:
            return None
        text = self.text if self.text and self.refusal(caps) is None else None
        parts = [part for part in (text, self.guidance) if part]
        if not parts:
            return None
        mode = self.mode if text else "append"
        return {"mode": mode, "content": [{"type": "text", "text": "\n\n".join(parts)}]}

    def doctor_line(self, caps: AgentCapabilities) -> str:
        """``system prompt: …`` for ``%silo doctor``."""
        if not caps.system_prompt:
            return (
                f"system prompt: not sent — {caps.agent_name} does not offer sessionCapabilities.systemPrompt"
            )
        refused = self.refusal(caps)
        if refused is not None:
            return f"system prompt: not sent — {refused}"
        modes = "append, override" if caps.system_prompt_override else "append"
        if not self.text:
            return f"system prompt: none in the profile (the agent takes {modes})"
        return f"system prompt: sent ({self.mode}, {len(self.text):,} characters; the agent takes {modes})"
