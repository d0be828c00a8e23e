"""The public data shapes of silo_nb (pydantic v2, frozen), named after Silo's SDK types.

- Attributes are snake_case; every model serializes by alias to Silo's camelCase, so a journal line is
  ``update.model_dump(mode="json", by_alias=True, exclude_none=True)`` and files are interchangeable
  with Silo's own journals.
- Agent traffic is parsed leniently elsewhere (``parse/``); these models only hold the result. Open
  strings (``kind``, ``status``, ``category``…) stay plain ``str`` so unknown values are kept.
- What the *user* passes in (prompt blocks, restore options) is validated strictly here.
- Agent traffic is hot (tens of thousands of updates a second): the parsers build these models with
  :func:`built`, without pydantic's validation (they checked every value already), so an update costs
  what a plain object costs. Schemas are built on first use (``defer_build``), not at import.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

__all__ = [
    "TOKEN_FIELDS",
    "AgentActivity",
    "AgentCommand",
    "AgentCommandInput",
    "AgentContentBlock",
    "AgentInfo",
    "AgentPlanEntry",
    "AgentProfileSummary",
    "AgentPromptBlock",
    "AgentPromptCapabilities",
    "AgentPromptResult",
    "AgentSessionConfigChoice",
    "AgentSessionConfigOption",
    "AgentSessionCost",
    "AgentSessionRestore",
    "AgentSessionSummary",
    "AgentSessionUpdate",
    "AgentSessionUsage",
    "AgentToolCall",
    "AgentToolCallContent",
    "AgentToolCallLocation",
    "AudioBlock",
    "ChatResumeState",
    "FrozenModel",
    "ImageBlock",
    "ResourceBlock",
    "ResourceLinkBlock",
    "ResumeOutcome",
    "TextBlock",
    "token_counts",
]

AgentActivity = Literal["none", "working", "blocked", "idle", "error", "dead"]
ChatResumeState = Literal["dormant", "live", "resuming", "resumed", "journal-only", "unavailable"]
ResumeOutcome = Literal["new", "resumed", "journal-only"]


class FrozenModel(BaseModel):
    """The base of silo_nb's data shapes: frozen, camelCase by alias, schemas built on first use."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, alias_generator=to_camel, defer_build=True)

    def to_json(self) -> dict[str, Any]:
        """Silo's camelCase JSON shape, absent fields omitted."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


M = TypeVar("M", bound=BaseModel)
_new = object.__new__
# BaseModel's slots, set through their descriptors: half the cost of object.__setattr__ by name.
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
_BUILDERS: dict[type[BaseModel], Callable[[dict[str, Any]], Any]] = {}


def builder(cls: type[M]) -> Callable[[dict[str, Any]], M]:
    """:func:`built` for one class, as a function of the values alone (made once per class): what the
    per-update parsers and the journal read call, a few hundred thousand times a restore."""
    known = _BUILDERS.get(cls)
    if known is not None:
        return known
    fields_set = set(cls.model_fields)  # shared by the instances: see built

    def build(values: dict[str, Any]) -> M:
        model = _new(cls)
        _set_dict(model, values)
        _set_fields_set(model, fields_set)
        _set_extra(model, None)
        _set_private(model, None)
        return model

    _BUILDERS[cls] = build
    return build


def built(cls: type[M], values: dict[str, Any]) -> M:
    """A ``cls`` holding ``values``, without validation: for what a lenient parser already checked.

    ``values`` must hold every field of ``cls`` (defaults included) by attribute name, in field order, each
    already of its declared type (tuples for tuples); it becomes the instance's ``__dict__``, uncopied.
    What ``model_construct`` does, minus its per-field alias and default handling (a tenth of the cost).
    Every field counts as set; the instances of a class share that set, which pydantic only ever copies
    (``model_copy``), never changes in place (the models are frozen). Only for models without private
    attributes. Hot callers keep :func:`builder`'s function instead (one call less).
    """
    return builder(cls)(values)


class _Strict(FrozenModel):
    model_config = ConfigDict(
        frozen=True, populate_by_name=True, alias_generator=to_camel, extra="forbid", strict=True
    )


# -- prompt input (strict: this is what the user passes) --------------------------------------------


class TextBlock(_Strict):
    """Literal text; never passed through a shell."""

    type: Literal["text"] = "text"
    text: str


class ResourceLinkBlock(_Strict):
    """A reference the agent can read itself; always allowed."""

    type: Literal["resource_link"] = "resource_link"
    uri: str = Field(min_length=1)
    name: str | None = None


class ResourceBlock(_Strict):
    """Embedded text content; only for agents whose prompt capabilities include embedded context."""

    type: Literal["resource"] = "resource"
    uri: str = Field(min_length=1)
    mime_type: str | None = None
    text: str


MAX_MEDIA_BYTES = 20 * 1024 * 1024  # an image or audio block's data, decoded


class _MediaBlock(_Strict):
    mime_type: str = Field(pattern=r"^[a-z]+/[A-Za-z0-9.+-]+$")
    data: str = Field(min_length=4, max_length=(MAX_MEDIA_BYTES * 4) // 3 + 4)  # base64
    # silo_nb's own, never sent: the name the journal and the "You" bubble say, and a small PNG preview
    # (``data:image/png;base64,…``, at most PREVIEW_CHARS) a transcript shows.
    name: str | None = None
    preview: str | None = Field(default=None, max_length=16_384)

    @field_validator("data")
    @classmethod
    def _base64(cls, value: str) -> str:
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("data must be base64 (the bytes of the file, encoded)") from None
        return value


class ImageBlock(_MediaBlock):
    """An image (base64 ``data``); only for agents whose prompt capabilities include images."""

    type: Literal["image"] = "image"
    mime_type: str = Field(pattern=r"^image/[A-Za-z0-9.+-]+$")


class AudioBlock(_MediaBlock):
    """Audio (base64 ``data``); only for agents whose prompt capabilities include audio."""

    type: Literal["audio"] = "audio"
    mime_type: str = Field(pattern=r"^audio/[A-Za-z0-9.+-]+$")


AgentPromptBlock = Annotated[
    TextBlock | ResourceLinkBlock | ResourceBlock | ImageBlock | AudioBlock, Field(discriminator="type")
]


class AgentPromptResult(FrozenModel):
    """How a turn ended: ``end_turn``, ``max_tokens``, ``max_turn_requests``, ``refusal``, ``cancelled``…

    ``raw`` is the agent's answer as it sent it (its own ``stopReason``, ``usage``, ``_meta``): after a
    Stop, ``stop_reason`` is ``cancelled`` even when the agent answered ``end_turn``, which ``raw`` keeps.
    ``usage`` is the answer's token usage when the agent sent one (ACP's unstable ``usage``:
    ``totalTokens``, ``inputTokens``, ``outputTokens``… for the session so far), as sent; else None."""

    stop_reason: str
    raw: dict[str, Any] = Field(default_factory=dict)
    usage: dict[str, Any] | None = None


# -- streamed content --------------------------------------------------------------------------------


class AgentContentBlock(FrozenModel):
    """A content block the agent sent; ``type`` is open-ended (unknown types are kept)."""

    type: str
    text: str | None = None
    mime_type: str | None = None
    uri: str | None = None
    name: str | None = None


class AgentToolCallLocation(FrozenModel):
    """A file the tool call touches (absolute path, 1-based line)."""

    path: str
    line: int | None = None


class AgentToolCallContent(FrozenModel):
    """``content``, ``diff``, ``terminal`` or a vendor type. ``old_text`` absent means a new file."""

    type: str
    content: AgentContentBlock | None = None
    path: str | None = None
    old_text: str | None = None
    new_text: str | None = None
    terminal_id: str | None = None


class AgentToolCall(FrozenModel):
    """A tool call or a patch to one: only ``tool_call_id`` is guaranteed; absent means unchanged."""

    tool_call_id: str
    title: str | None = None
    kind: str | None = None
    status: str | None = None
    content: tuple[AgentToolCallContent, ...] | None = None
    locations: tuple[AgentToolCallLocation, ...] | None = None
    raw_input: Any = None
    raw_output: Any = None


class AgentPlanEntry(FrozenModel):
    """One step of the agent's plan (``status``: pending, in_progress, completed…)."""

    content: str
    status: str | None = None
    priority: str | None = None


class AgentSessionCost(FrozenModel):
    """Money spent so far in the session (ISO 4217 currency)."""

    amount: int | float
    currency: str


class AgentSessionUsage(FrozenModel):
    """Context used / window size in tokens, and optionally the cost so far."""

    used: int | float
    size: int | float
    cost: AgentSessionCost | None = None


# ACP's ``Usage`` (a prompt answer's token counts): the fields a ``turn_end`` line keeps, in footer order.
TOKEN_FIELDS = (
    "inputTokens", "outputTokens", "thoughtTokens", "cachedReadTokens", "cachedWriteTokens", "totalTokens",
)  # fmt: skip


def token_counts(usage: object) -> dict[str, int]:
    """The token counts of an ACP ``Usage`` object: its known fields that are counts (an int ≥ 0, not a
    bool), in :data:`TOKEN_FIELDS` order; nothing else (an agent's odd value is not a count)."""
    if not isinstance(usage, Mapping):
        return {}
    found = {key: usage.get(key) for key in TOKEN_FIELDS}
    return {k: v for k, v in found.items() if isinstance(v, int) and not isinstance(v, bool) and v >= 0}


class AgentSessionUpdate(FrozenModel):
    """One normalized ``session/update``. Unknown kinds are kept; ``raw`` is the wire ``update``.

    ``child_session_id`` is set on a subagent's traffic (ACP v1.25, unstable): the id of the child session
    the agent sent it under (announced by a ``subagent_update``); None for the session's own updates."""

    kind: str
    text: str | None = None
    content: AgentContentBlock | None = None
    message_id: str | None = None
    timestamp: str | None = None
    tool_call: AgentToolCall | None = None
    plan: tuple[AgentPlanEntry, ...] | None = None
    usage: AgentSessionUsage | None = None
    raw: dict[str, Any] = Field(default_factory=dict)
    child_session_id: str | None = None


# -- session controls --------------------------------------------------------------------------------


class AgentSessionConfigChoice(FrozenModel):
    """One value of a ``select`` config option."""

    value: str
    name: str
    description: str | None = None


class AgentSessionConfigOption(FrozenModel):
    """A session control. ``type`` is ``select`` or ``boolean`` (others are kept but not rendered)."""

    id: str
    name: str
    description: str | None = None
    category: str = ""
    type: str = "select"
    current_value: Any = None
    options: tuple[AgentSessionConfigChoice, ...] = ()


class AgentCommandInput(FrozenModel):
    """Present when a command takes free text; ``hint`` describes it."""

    hint: str | None = None


class AgentCommand(FrozenModel):
    """A slash command; invoke it with ``prompt([{"type": "text", "text": "/" + name}])``."""

    name: str
    description: str | None = None
    input: AgentCommandInput | None = None


class AgentPromptCapabilities(FrozenModel):
    """What a prompt may contain beyond text and resource links; fixed at ``initialize``."""

    image: bool = False
    audio: bool = False
    embedded_context: bool = False


class AgentSessionSummary(FrozenModel):
    """One entry of ``list_sessions``; ``raw`` is the agent's own ``SessionInfo``."""

    session_id: str
    cwd: str | None = None
    title: str | None = None
    updated_at: str | None = None
    raw: dict[str, Any] = Field(default_factory=dict)


class AgentSessionRestore(_Strict):
    """Reconnect a persisted session: resume/load it, or ``start_fresh`` (carrying or discarding)."""

    session_id: str = Field(min_length=1)
    start_fresh: bool = False
    transcript: Literal["carry", "discard"] = "carry"


# -- status ------------------------------------------------------------------------------------------


class AgentInfo(FrozenModel):
    """One Agent Session as ``AgentsService.get_state`` reports it."""

    id: str
    workspace_id: str
    title: str
    kind: Literal["chat", "terminal"] = "chat"
    is_agent: bool = True
    activity: AgentActivity = "idle"
    needs_attention: bool = False
    attention_since: str | None = None
    working_since: str | None = None
    idle_since: str | None = None
    stale: bool = False
    session_id: str | None = None
    can_resume: bool = False
    agent_name: str | None = None
    agent_id: str | None = None
    chat_resume_state: ChatResumeState | None = None
    cwd: str | None = None
    # silo_nb's: why the session's journal cannot be written right now (full disk…), None when it can.
    journal_problem: str | None = None


class AgentProfileSummary(FrozenModel):
    """What a notebook may know of a profile: never its command, args or env."""

    id: str
    label: str
    is_default: bool = False
    accepts_prompt: bool = False
    interface: Literal["chat", "terminal"] = "chat"
    agent_id: str | None = None
    kernel_tools: bool = True  # sessions connected from a kernel get the "notebook" MCP server
    run_code_timeout: float = 60.0  # seconds one kernel tools' run_code may run
    cell_changes_per_turn: int = 200  # cells one turn's cell tools may insert, edit, move or delete
    checkpoint_max_bytes: int = 512 * 1024 * 1024  # memory the undo's variable checkpoints may take
