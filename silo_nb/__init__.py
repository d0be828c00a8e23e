"""silo_nb: Silo's chat agent sessions (the Agent Client Protocol) in Jupyter.

``silo_nb.agents`` is the ``AgentsService`` of the current workspace (created on first use);
``silo_nb.AgentsService(...)`` makes an explicit one (tests, scripts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

from silo_nb.sessions import (
    AgentProfilesService,
    AgentSessionError,
    AgentSessionHandle,
    AgentSessionInputError,
    AgentSessionsService,
    AgentSignInError,
    AgentsService,
)
from silo_nb.sessions.models import (
    AgentCommand,
    AgentCommandInput,
    AgentContentBlock,
    AgentInfo,
    AgentPermissionOption,
    AgentPermissionRequest,
    AgentPlanEntry,
    AgentProfileSummary,
    AgentPromptBlock,
    AgentPromptCapabilities,
    AgentPromptResult,
    AgentSessionConfigChoice,
    AgentSessionConfigOption,
    AgentSessionCost,
    AgentSessionRestore,
    AgentSessionSummary,
    AgentSessionUpdate,
    AgentSessionUsage,
    AgentToolCall,
    AgentToolCallContent,
    AgentToolCallLocation,
    ResourceBlock,
    ResourceLinkBlock,
    TextBlock,
)
from silo_nb.util import Disposable

if TYPE_CHECKING:
    agents: AgentsService

__all__ = [
    "AgentCommand",
    "AgentCommandInput",
    "AgentContentBlock",
    "AgentInfo",
    "AgentPermissionOption",
    "AgentPermissionRequest",
    "AgentPlanEntry",
    "AgentProfileSummary",
    "AgentProfilesService",
    "AgentPromptBlock",
    "AgentPromptCapabilities",
    "AgentPromptResult",
    "AgentSessionConfigChoice",
    "AgentSessionConfigOption",
    "AgentSessionCost",
    "AgentSessionError",
    "AgentSessionHandle",
    "AgentSessionInputError",
    "AgentSessionRestore",
    "AgentSessionSummary",
    "AgentSessionUpdate",
    "AgentSessionUsage",
    "AgentSessionsService",
    "AgentSignInError",
    "AgentToolCall",
    "AgentToolCallContent",
    "AgentToolCallLocation",
    "AgentsService",
    "Disposable",
    "ResourceBlock",
    "ResourceLinkBlock",
    "TextBlock",
    "agents",
    "wait",
]

_default_agents: AgentsService | None = None


async def wait() -> None:
    """Wait for every background ``%%prompt`` turn to end, and re-publish their transcripts here."""
    from silo_nb.notebook.turns import wait as wait_for_turns

    await wait_for_turns()


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext silo_nb``: registers ``%silo`` and ``%%prompt``."""
    from silo_nb.notebook.magics import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from silo_nb.notebook.magics import unload_ipython_extension as unload

    unload(ipython)


def __getattr__(name: str) -> Any:
    # ``silo_nb.agents`` is made on first use, so importing silo_nb reads no files and starts nothing.
    global _default_agents
    if name == "agents":
        if _default_agents is None:
            _default_agents = AgentsService()
        return _default_agents
    raise AttributeError(f"module 'silo_nb' has no attribute {name!r}")
