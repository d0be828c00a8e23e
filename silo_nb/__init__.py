"""silo_nb: Silo's chat agent sessions (the Agent Client Protocol) in Jupyter.

``silo_nb.agents`` is the ``AgentsService`` of the current workspace (created on first use);
``silo_nb.AgentsService(...)`` makes an explicit one (tests, scripts). Experiments:
``silo_nb.frame(...)`` (turns as a DataFrame), ``silo_nb.run_grid(...)`` with ``silo_nb.PermissionPolicy``
and scorers (``silo_nb.command_scorer``, any function of a ``GridRun``), ``silo_nb.rescore``,
``silo_nb.summarize`` (with ``plot_pass_rates`` / ``plot_cost_vs_pass``), ``silo_nb.show`` (a run's
results), ``silo_nb.report`` (a run as one HTML page) and ``silo_nb.export_trajectories`` (ATIF files).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from silo_nb.util import Disposable
from silo_nb.version import VERSION as __version__  # noqa: F401  (the package's version)

if TYPE_CHECKING:
    from silo_nb._grid_entry import fork_grid, run_grid
    from silo_nb.acp import Sandbox
    from silo_nb.experiments import (
        GridRun,
        PermissionPolicy,
        QuestionPolicy,
        Rule,
        command_scorer,
        export_trajectories,
        frame,
        plot_cost_vs_pass,
        plot_pass_rates,
        rescore,
        summarize,
    )
    from silo_nb.model import (
        AgentCommand,
        AgentCommandInput,
        AgentContentBlock,
        AgentElicitationRequest,
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
        AgentSessionError,
        AgentSessionInputError,
        AgentSessionRestore,
        AgentSessionSummary,
        AgentSessionUpdate,
        AgentSessionUsage,
        AgentSignInError,
        AgentToolCall,
        AgentToolCallContent,
        AgentToolCallLocation,
        AudioBlock,
        ImageBlock,
        ResourceBlock,
        ResourceLinkBlock,
        StaleTurn,
        TextBlock,
    )
    from silo_nb.notebook import attach_cell, report, show
    from silo_nb.sessions import (
        AgentProfilesService,
        AgentSessionHandle,
        AgentSessionsService,
        AgentsService,
        McpServerConfig,
    )

    agents: AgentsService

# Loaded on first use: a script that needs one name (or ``python -m silo_nb install``) loads one layer, not
# the sessions, experiments and notebook layers all at once.
_FROM_MODEL = (
    "AgentCommand",
    "AgentCommandInput",
    "AgentContentBlock",
    "AgentElicitationRequest",
    "AgentInfo",
    "AgentPermissionOption",
    "AgentPermissionRequest",
    "AgentPlanEntry",
    "AgentProfileSummary",
    "AgentPromptBlock",
    "AgentPromptCapabilities",
    "AgentPromptResult",
    "AgentSessionConfigChoice",
    "AgentSessionConfigOption",
    "AgentSessionCost",
    "AgentSessionError",
    "AgentSessionInputError",
    "AgentSessionRestore",
    "AgentSessionSummary",
    "AgentSessionUpdate",
    "AgentSessionUsage",
    "AgentSignInError",
    "AgentToolCall",
    "AgentToolCallContent",
    "AgentToolCallLocation",
    "AudioBlock",
    "ImageBlock",
    "ResourceBlock",
    "ResourceLinkBlock",
    "StaleTurn",
    "TextBlock",
)
_FROM_SESSIONS = (
    "AgentProfilesService",
    "AgentSessionHandle",
    "AgentSessionsService",
    "AgentsService",
    "McpServerConfig",
)
_LAZY = {
    **dict.fromkeys(_FROM_MODEL, "silo_nb.model"),
    **dict.fromkeys(_FROM_SESSIONS, "silo_nb.sessions"),
    "frame": "silo_nb.experiments",
    "fork_grid": "silo_nb._grid_entry",
    "GridRun": "silo_nb.experiments",
    "PermissionPolicy": "silo_nb.experiments",
    "QuestionPolicy": "silo_nb.experiments",
    "Rule": "silo_nb.experiments",
    "command_scorer": "silo_nb.experiments",
    "export_trajectories": "silo_nb.experiments",
    "plot_cost_vs_pass": "silo_nb.experiments",
    "plot_pass_rates": "silo_nb.experiments",
    "rescore": "silo_nb.experiments",
    "summarize": "silo_nb.experiments",
    "run_grid": "silo_nb._grid_entry",
    "Sandbox": "silo_nb.acp",  # run_grid(sandbox=Sandbox("bwrap", read_only=...))
    "report": "silo_nb.notebook.results",
    "show": "silo_nb.notebook.results",
    "attach_cell": "silo_nb.notebook",
}

__all__ = [
    "AgentCommand",
    "AgentCommandInput",
    "AgentContentBlock",
    "AgentElicitationRequest",
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
    "AudioBlock",
    "Disposable",
    "GridRun",
    "ImageBlock",
    "McpServerConfig",
    "PermissionPolicy",
    "QuestionPolicy",
    "ResourceBlock",
    "ResourceLinkBlock",
    "Rule",
    "Sandbox",
    "StaleTurn",
    "TextBlock",
    "agents",
    "attach_cell",
    "command_scorer",
    "export_trajectories",
    "fork_grid",
    "frame",
    "plot_cost_vs_pass",
    "plot_pass_rates",
    "promote",
    "report",
    "rescore",
    "run_grid",
    "show",
    "summarize",
    "wait",
]


async def wait() -> None:
    """Wait for every background ``%%prompt`` turn to end, and re-publish their transcripts here."""
    from silo_nb.notebook import wait as wait_for_turns

    await wait_for_turns()


async def promote(run: Any, cell: str, *, name: str | None = None) -> AgentSessionHandle:
    """Make ``cell``'s fork of a ``fork_grid`` run the notebook's session: the connection of the forked
    session (or ``name``) drives the fork from now on, and ``%silo connect`` after a restart resumes it."""
    from silo_nb.notebook import promote as promote_fork

    handle: AgentSessionHandle = await promote_fork(run, cell, name=name)
    return handle


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext silo_nb``: registers ``%silo`` and ``%%prompt``."""
    from silo_nb.notebook import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from silo_nb.notebook import unload_ipython_extension as unload

    unload(ipython)


def __getattr__(name: str) -> Any:
    # ``silo_nb.agents`` is made on first use, so importing silo_nb reads no files and starts nothing.
    if name == "agents":
        from silo_nb.sessions import default_agents

        return default_agents()
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'silo_nb' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
