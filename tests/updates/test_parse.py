"""Silo's lenient parse rules (silo-agents-api.md §1.6–§1.9) and the journal's JSON shape (§3.1)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from silo_nb.model.models import (
    AgentCommandInput,
    AgentContentBlock,
    AgentPlanEntry,
    AgentSessionCost,
    AgentSessionUpdate,
    AgentSessionUsage,
    AgentToolCall,
    AgentToolCallContent,
    AgentToolCallLocation,
)
from silo_nb.sessions.capabilities import capability_enabled, parse_prompt_capabilities
from silo_nb.sessions.journal import journal_line_to_update
from silo_nb.updates.parse import (
    MessageIdSynthesizer,
    parse_commands,
    parse_config_options,
    parse_permission_options,
    parse_update,
    synthesize_legacy_options,
)


def must_parse(wire: dict[str, Any]) -> AgentSessionUpdate:
    update = parse_update(wire)
    assert update is not None
    return update


# -- text chunks -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["agent_message_chunk", "agent_thought_chunk", "user_message_chunk"])
def test_text_chunk(kind: str) -> None:
    wire = {"sessionUpdate": kind, "content": {"type": "text", "text": "hello"}, "messageId": "m-1"}
    update = must_parse(wire)
    assert update.kind == kind
    assert update.text == "hello"
    assert update.content == AgentContentBlock(type="text", text="hello")
    assert update.message_id == "m-1"
    assert update.raw == wire
    assert update.tool_call is None and update.plan is None and update.usage is None


def test_text_chunk_without_content_or_id() -> None:
    update = must_parse({"sessionUpdate": "agent_message_chunk"})
    assert update.kind == "agent_message_chunk"
    assert update.text is None
    assert update.content is None
    assert update.message_id is None
    assert update.to_json() == {
        "kind": "agent_message_chunk",
        "raw": {"sessionUpdate": "agent_message_chunk"},
    }


def test_text_chunk_with_non_string_text_or_id() -> None:
    update = must_parse(
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": 5}, "messageId": 3}
    )
    assert update.content == AgentContentBlock(type="text")
    assert update.text is None
    assert update.message_id is None


def test_content_block_without_string_type_is_dropped() -> None:
    update = must_parse({"sessionUpdate": "agent_message_chunk", "content": {"text": "no type"}})
    assert update.content is None
    assert update.text is None


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (
            {"type": "image", "mimeType": "image/png", "data": "iVBOR"},
            AgentContentBlock(type="image", mime_type="image/png"),
        ),
        (
            {"type": "resource_link", "uri": "file:///a.py", "name": "a.py", "mimeType": 7},
            AgentContentBlock(type="resource_link", uri="file:///a.py", name="a.py"),
        ),
        ({"type": "vendor_widget", "foo": 1}, AgentContentBlock(type="vendor_widget")),
    ],
    ids=["image", "resource_link", "unknown-type"],
)
def test_non_text_content_block_is_kept_with_its_type(
    block: dict[str, Any], expected: AgentContentBlock
) -> None:
    update = must_parse({"sessionUpdate": "agent_message_chunk", "content": block})
    assert update.content == expected
    assert update.text is None
    assert update.raw["content"] == block


def test_embedded_resource_block_reads_nested_fields() -> None:
    block = {
        "type": "resource",
        "resource": {"uri": "file:///n.md", "mimeType": "text/markdown", "text": "# hi"},
    }
    update = must_parse({"sessionUpdate": "user_message_chunk", "content": block})
    assert update.content is not None
    assert update.content.type == "resource"
    assert update.content.uri == "file:///n.md"
    assert update.content.mime_type == "text/markdown"


# -- tool calls --------------------------------------------------------------------------------------


def test_tool_call_full() -> None:
    wire = {
        "sessionUpdate": "tool_call",
        "toolCallId": "call-1",
        "title": "Edit main.py",
        "kind": "edit",
        "status": "pending",
        "content": [
            {"type": "content", "content": {"type": "text", "text": "output"}},
            {"type": "diff", "path": "/p/new.py", "oldText": None, "newText": "print(1)\n"},
            {"type": "diff", "path": "/p/old.py", "oldText": "a", "newText": "b"},
            {"type": "terminal", "terminalId": "term-1"},
            {"type": "vendor_content", "x": 1},
            {"no": "type"},
            5,
            None,
            {"type": 3},
        ],
        "locations": [
            {"path": "/p/new.py", "line": 3},
            {"path": "/p/old.py"},
            {"line": 2},
            "not a location",
            {"path": 5},
            {"path": "/p/zero.py", "line": 0},
            {"path": "/p/float.py", "line": "7"},
        ],
        "rawInput": {"file_path": "/p/new.py", "nothing": None},
    }
    update = must_parse(wire)
    call = update.tool_call
    assert call is not None
    assert (call.tool_call_id, call.title, call.kind, call.status) == (
        "call-1",
        "Edit main.py",
        "edit",
        "pending",
    )
    assert call.content == (
        AgentToolCallContent(type="content", content=AgentContentBlock(type="text", text="output")),
        AgentToolCallContent(type="diff", path="/p/new.py", new_text="print(1)\n"),
        AgentToolCallContent(type="diff", path="/p/old.py", old_text="a", new_text="b"),
        AgentToolCallContent(type="terminal", terminal_id="term-1"),
        AgentToolCallContent(type="vendor_content"),
    )
    assert call.locations == (
        AgentToolCallLocation(path="/p/new.py", line=3),
        AgentToolCallLocation(path="/p/old.py"),
        AgentToolCallLocation(path="/p/zero.py"),
        AgentToolCallLocation(path="/p/float.py"),
    )
    assert call.raw_input == {"file_path": "/p/new.py", "nothing": None}
    assert call.raw_output is None
    assert update.raw == wire
    assert update.text is None and update.message_id is None
    # oldText: null (file creation) is absent in the journal shape.
    new_file_diff = update.to_json()["toolCall"]["content"][1]
    assert new_file_diff == {"type": "diff", "path": "/p/new.py", "newText": "print(1)\n"}
    assert "oldText" in update.to_json()["toolCall"]["content"][2]


def test_tool_call_update_carries_only_changed_fields() -> None:
    update = must_parse({"sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": "completed"})
    assert update.tool_call == AgentToolCall(tool_call_id="call-1", status="completed")
    call_json = update.to_json()["toolCall"]
    assert call_json == {"toolCallId": "call-1", "status": "completed"}  # absent = unchanged


def test_tool_call_update_with_empty_arrays_replaces_them() -> None:
    update = must_parse(
        {"sessionUpdate": "tool_call_update", "toolCallId": "c", "content": [], "locations": []}
    )
    assert update.tool_call is not None
    assert update.tool_call.content == ()
    assert update.tool_call.locations == ()


@pytest.mark.parametrize("content", ["not a list", {"type": "content"}, None])
def test_tool_call_non_list_content_is_absent(content: Any) -> None:
    update = must_parse({"sessionUpdate": "tool_call_update", "toolCallId": "c", "content": content})
    assert update.tool_call is not None
    assert update.tool_call.content is None


@pytest.mark.parametrize("kind", ["tool_call", "tool_call_update"])
@pytest.mark.parametrize("tool_call_id", [None, 5, ["x"]], ids=repr)
def test_tool_call_without_string_id_has_no_tool_call(kind: str, tool_call_id: Any) -> None:
    wire: dict[str, Any] = {"sessionUpdate": kind, "title": "t"}
    if tool_call_id is not None:
        wire["toolCallId"] = tool_call_id
    update = must_parse(wire)
    assert update.kind == kind
    assert update.tool_call is None
    assert update.raw == wire


# -- plans -------------------------------------------------------------------------------------------


def test_plan_drops_entries_without_content() -> None:
    update = must_parse(
        {
            "sessionUpdate": "plan",
            "entries": [
                {"content": "Read the code", "status": "completed", "priority": "high"},
                {"content": "", "status": "pending"},
                {"status": "pending"},
                {"content": 5},
                "junk",
                {"content": "Write tests", "status": "in_progress", "priority": 2},
            ],
        }
    )
    assert update.plan == (
        AgentPlanEntry(content="Read the code", status="completed", priority="high"),
        AgentPlanEntry(content="Write tests", status="in_progress"),
    )


def test_empty_plan_is_a_real_empty_plan() -> None:
    update = must_parse({"sessionUpdate": "plan", "entries": []})
    assert update.plan == ()
    assert update.plan is not None
    assert update.to_json()["plan"] == []
    # ... and survives the journal round trip as [] (not absent).
    restored = journal_line_to_update(json.loads(json.dumps(update.to_json())))
    assert restored is not None
    assert restored.plan == ()


def test_non_plan_update_has_no_plan() -> None:
    assert must_parse({"sessionUpdate": "agent_message_chunk"}).plan is None
    assert "plan" not in must_parse({"sessionUpdate": "agent_message_chunk"}).to_json()


# -- usage -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        ({"used": 1200, "size": 200000}, AgentSessionUsage(used=1200, size=200000)),
        ({"used": 0, "size": 0.5}, AgentSessionUsage(used=0, size=0.5)),
        (
            {"used": 10, "size": 100, "cost": {"amount": 0.25, "currency": "USD"}},
            AgentSessionUsage(used=10, size=100, cost=AgentSessionCost(amount=0.25, currency="USD")),
        ),
        ({"used": 10, "size": 100, "cost": {"amount": 0.25}}, AgentSessionUsage(used=10, size=100)),
        ({"used": 10, "size": 100, "cost": {"currency": "USD"}}, AgentSessionUsage(used=10, size=100)),
        (
            {"used": 10, "size": 100, "cost": {"amount": "1", "currency": "USD"}},
            AgentSessionUsage(used=10, size=100),
        ),
        (
            {"used": 10, "size": 100, "cost": {"amount": math.nan, "currency": "USD"}},
            AgentSessionUsage(used=10, size=100),
        ),
        (  # a negative cost is no cost: as unknown as NaN (issue 28: it lowered a grid's spent total)
            {"used": 10, "size": 100, "cost": {"amount": -5, "currency": "USD"}},
            AgentSessionUsage(used=10, size=100),
        ),
        ({"used": 10, "size": 100, "cost": "free"}, AgentSessionUsage(used=10, size=100)),
        ({"used": 10}, None),
        ({"size": 10}, None),
        ({"used": "10", "size": 100}, None),
        ({"used": True, "size": 100}, None),
        ({"used": math.nan, "size": 100}, None),
        ({"used": 1, "size": math.inf}, None),
        ({"used": None, "size": 100}, None),
    ],
)
def test_usage_update(wire: dict[str, Any], expected: AgentSessionUsage | None) -> None:
    update = must_parse({"sessionUpdate": "usage_update", **wire})
    assert update.kind == "usage_update"
    assert update.usage == expected


# -- unknown kinds -----------------------------------------------------------------------------------


def test_unknown_kind_is_kept_with_raw() -> None:
    wire = {"sessionUpdate": "subagent_spawned", "subagentSessionId": "x:generation:1", "_meta": {"a": 1}}
    update = must_parse(wire)
    assert update.kind == "subagent_spawned"
    assert update.raw == wire
    assert update.to_json() == {"kind": "subagent_spawned", "raw": wire}


def test_raw_is_a_copy_of_the_wire_update() -> None:
    wire = {"sessionUpdate": "session_info_update", "title": "T"}
    update = must_parse(wire)
    wire["title"] = "changed"
    assert update.raw["title"] == "T"


@pytest.mark.parametrize(
    "wire", [{}, {"content": {"type": "text", "text": "x"}}, {"sessionUpdate": 5}, {"sessionUpdate": None}]
)
def test_missing_session_update_kind_is_none(wire: dict[str, Any]) -> None:
    assert parse_update(wire) is None


# -- message-id synthesis ----------------------------------------------------------------------------


def _chunk(kind: str, message_id: str | None = None) -> AgentSessionUpdate:
    wire: dict[str, Any] = {"sessionUpdate": kind}
    if kind.endswith("_chunk"):
        wire["content"] = {"type": "text", "text": "x"}
    if kind.startswith("tool_call"):
        wire["toolCallId"] = "t"
    if kind == "plan":
        wire["entries"] = []
    if message_id is not None:
        wire["messageId"] = message_id
    return must_parse(wire)


A, T, U = "agent_message_chunk", "agent_thought_chunk", "user_message_chunk"


@pytest.mark.parametrize(
    ("sequence", "expected"),
    [
        pytest.param([A, A, A], ["silo-msg-1"] * 3, id="same-kind-run"),
        pytest.param(
            [T, T, A, A], ["silo-msg-1", "silo-msg-1", "silo-msg-2", "silo-msg-2"], id="kind-change"
        ),
        pytest.param([A, T, A], ["silo-msg-1", "silo-msg-2", "silo-msg-3"], id="kind-change-back"),
        pytest.param([U, A], ["silo-msg-1", "silo-msg-2"], id="user-then-agent"),
        pytest.param([A, "tool_call", A], ["silo-msg-1", None, "silo-msg-2"], id="tool_call-breaks"),
        pytest.param(
            [A, "tool_call_update", A], ["silo-msg-1", None, "silo-msg-2"], id="tool_call_update-breaks"
        ),
        pytest.param([A, "plan", A], ["silo-msg-1", None, "silo-msg-2"], id="plan-breaks"),
        pytest.param(
            [A, (A, "agent-7"), A, A],
            ["silo-msg-1", "agent-7", "silo-msg-2", "silo-msg-2"],
            id="agent-id-breaks",
        ),
        pytest.param([(A, "m1"), (A, "m1"), A], ["m1", "m1", "silo-msg-1"], id="agent-ids-kept"),
        pytest.param(
            [A, "usage_update", "available_commands_update", A],
            ["silo-msg-1", None, None, "silo-msg-1"],
            id="usage-and-commands-do-not-break",
        ),
        pytest.param(
            ["usage_update", "tool_call", A, "usage_update", A, "plan", "usage_update", A],
            [None, None, "silo-msg-1", None, "silo-msg-1", None, None, "silo-msg-2"],
            id="mixed",
        ),
    ],
)
def test_message_id_synthesizer_runs(sequence: list[Any], expected: list[str | None]) -> None:
    synth = MessageIdSynthesizer()
    got: list[str | None] = []
    for item in sequence:
        kind, message_id = item if isinstance(item, tuple) else (item, None)
        update = _chunk(kind, message_id)
        result = synth.apply(update)
        assert result.kind == update.kind
        assert result.text == update.text
        assert result.raw == update.raw
        got.append(result.message_id)
    assert got == expected


def test_message_id_synthesizer_leaves_input_untouched_and_counters_are_per_instance() -> None:
    chunk = _chunk(A)
    first = MessageIdSynthesizer().apply(chunk)
    second = MessageIdSynthesizer().apply(chunk)
    assert chunk.message_id is None
    assert first.message_id == second.message_id == "silo-msg-1"
    usage = _chunk("usage_update")
    assert MessageIdSynthesizer().apply(usage).message_id is None


# -- commands ----------------------------------------------------------------------------------------


def test_parse_commands() -> None:
    commands = parse_commands(
        [
            {"name": "plan", "description": "Make a plan", "input": {"hint": "what to plan"}},
            {"name": "clear", "input": None},
            {"name": "skill:review", "input": {}},
            {"name": "compact", "input": {"hint": 5}},
            {"description": "nameless"},
            {"name": ""},
            {"name": 5},
            "junk",
            {"name": "bare"},
        ]
    )
    assert [c.name for c in commands] == ["plan", "clear", "skill:review", "compact", "bare"]
    plan, clear, skill, compact, bare = commands
    assert plan.description == "Make a plan"
    assert plan.input == AgentCommandInput(hint="what to plan")
    assert clear.input is None
    assert "input" not in clear.to_json()
    assert skill.input is not None
    assert skill.input.hint is None
    assert skill.to_json() == {"name": "skill:review", "input": {}}
    assert compact.input == AgentCommandInput()
    assert bare.input is None and bare.description is None


@pytest.mark.parametrize("value", [None, {}, "x", 5])
def test_parse_commands_non_list(value: Any) -> None:
    assert parse_commands(value) == ()


# -- config options ----------------------------------------------------------------------------------


def test_parse_config_options_select_defaults() -> None:
    (option,) = parse_config_options(
        [{"id": "model", "options": [{"value": "sonnet", "name": "Sonnet"}, {"value": "opus"}]}]
    )
    assert option.type == "select"
    assert option.name == "model"
    assert option.category == ""
    assert option.description is None
    assert option.current_value == "sonnet"
    assert [(c.value, c.name) for c in option.options] == [("sonnet", "Sonnet"), ("opus", "opus")]


def test_parse_config_options_keeps_current_value_and_category() -> None:
    (option,) = parse_config_options(
        [
            {
                "id": "mode",
                "name": "Mode",
                "description": "How it works",
                "category": "mode",
                "type": "select",
                "currentValue": "plan",
                "options": [{"value": "code"}, {"value": "plan", "description": "Think first"}],
            }
        ]
    )
    assert (option.id, option.name, option.category, option.current_value) == ("mode", "Mode", "mode", "plan")
    assert option.description == "How it works"
    assert option.options[1].description == "Think first"


def test_parse_config_options_drops_invalid_selects() -> None:
    options = parse_config_options(
        [
            {"options": [{"value": "a"}]},
            {"id": "", "options": [{"value": "a"}]},
            {"id": 5, "options": [{"value": "a"}]},
            {"id": "empty", "options": []},
            {"id": "none"},
            {"id": "bad-choices", "options": [{"name": "no value"}, {"value": 3}, "junk"]},
            "junk",
            {"id": "ok", "options": [{"name": "skip"}, {"value": "v"}]},
        ]
    )
    assert [o.id for o in options] == ["ok"]
    assert [c.value for c in options[0].options] == ["v"]
    assert options[0].current_value == "v"


def test_parse_config_options_flattens_groups_in_order() -> None:
    (option,) = parse_config_options(
        [
            {
                "id": "model",
                "category": "model",
                "options": [
                    {
                        "group": "anthropic",
                        "name": "Anthropic",
                        "options": [{"value": "a1"}, {"value": "a2"}],
                    },
                    {"value": "solo"},
                    {"group": "openai", "name": "OpenAI", "options": [{"value": "o1", "name": "O one"}]},
                    {"group": "empty", "name": "Empty", "options": []},
                ],
            }
        ]
    )
    assert [c.value for c in option.options] == ["a1", "a2", "solo", "o1"]
    assert option.options[3].name == "O one"
    assert option.current_value == "a1"


def test_parse_config_options_boolean_and_unknown_types() -> None:
    options = parse_config_options(
        [
            {"id": "fast", "type": "boolean", "currentValue": True, "category": "speed"},
            {"id": "quiet", "type": "boolean"},
            {"id": "weird", "type": "boolean", "currentValue": "yes"},
            {"id": "temperature", "type": "number", "currentValue": 0.7},
        ]
    )
    fast, quiet, weird, temperature = options
    assert fast.type == "boolean" and fast.current_value is True and fast.options == ()
    assert fast.category == "speed"
    assert quiet.current_value is False
    assert weird.current_value is False
    assert temperature.type == "number"
    assert temperature.current_value == 0.7


@pytest.mark.parametrize("value", [None, {}, "x"])
def test_parse_config_options_non_list(value: Any) -> None:
    assert parse_config_options(value) == ()


# -- legacy modes / models ---------------------------------------------------------------------------


def test_synthesize_legacy_options_from_modes_and_models() -> None:
    mode, model = synthesize_legacy_options(
        {
            "sessionId": "s",
            "modes": {
                "currentModeId": "code",
                "availableModes": [
                    {"id": "ask", "name": "Ask"},
                    {"id": "code", "name": "Code", "description": "Write code"},
                    {"name": "no id"},
                    "junk",
                ],
            },
            "models": {
                "availableModels": [{"modelId": "m1", "name": "Model One"}, {"modelId": "m2"}, {"id": "x"}]
            },
        }
    )
    assert (mode.id, mode.name, mode.category, mode.type, mode.current_value) == (
        "mode",
        "Mode",
        "mode",
        "select",
        "code",
    )
    assert [(c.value, c.name, c.description) for c in mode.options] == [
        ("ask", "Ask", None),
        ("code", "Code", "Write code"),
    ]
    assert (model.id, model.category, model.current_value) == ("model", "model", "m1")
    assert [(c.value, c.name) for c in model.options] == [("m1", "Model One"), ("m2", "m2")]


def test_synthesize_legacy_options_only_what_is_there() -> None:
    assert synthesize_legacy_options({}) == ()
    assert synthesize_legacy_options({"modes": None, "models": {"availableModels": []}}) == ()
    (model,) = synthesize_legacy_options(
        {"models": {"currentModelId": "b", "availableModels": [{"modelId": "a"}, {"modelId": "b"}]}}
    )
    assert model.id == "model"
    assert model.current_value == "b"


@pytest.mark.parametrize("bad", [5, True, 1.5])
def test_synthesize_legacy_options_never_raises_on_non_list(bad: Any) -> None:
    assert (
        synthesize_legacy_options({"modes": {"availableModes": bad}, "models": {"availableModels": bad}})
        == ()
    )


# -- prompt capabilities, permissions, capability flags ----------------------------------------------


def test_parse_prompt_capabilities_under_agent_capabilities() -> None:
    caps = parse_prompt_capabilities(
        {
            "protocolVersion": 1,
            "agentCapabilities": {"promptCapabilities": {"image": True, "embeddedContext": True}},
        }
    )
    assert (caps.image, caps.audio, caps.embedded_context) == (True, False, True)
    assert caps.to_json() == {"image": True, "audio": False, "embeddedContext": True}


@pytest.mark.parametrize(
    "init_result",
    [
        {},
        {"agentCapabilities": {}},
        {"agentCapabilities": None},
        {"agentCapabilities": {"promptCapabilities": None}},
    ],
)
def test_parse_prompt_capabilities_missing_means_false(init_result: dict[str, Any]) -> None:
    caps = parse_prompt_capabilities(init_result)
    assert (caps.image, caps.audio, caps.embedded_context) == (False, False, False)


def test_parse_permission_options_defaults() -> None:
    options = parse_permission_options(
        [
            {"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "reject"},
            {},
            {"optionId": 3, "kind": None},
            {"name": "Named only", "kind": "vendor_kind"},
        ]
    )
    assert [(o.option_id, o.name, o.kind) for o in options] == [
        ("allow", "Allow once", "allow_once"),
        ("reject", "reject", ""),
        ("", "Option", ""),
        ("3", "3", ""),
        ("", "Named only", "vendor_kind"),
    ]
    assert parse_permission_options(None) == ()


@pytest.mark.parametrize(
    ("value", "enabled"),
    [
        (True, True),
        ({}, True),
        ({"x": 1}, True),
        (None, False),
        (False, False),
        ([], False),
        (["x"], False),
        ("yes", False),
        (1, False),
        (0, False),
        ("", False),
    ],
    ids=repr,
)
def test_capability_enabled_truth_table(value: Any, enabled: bool) -> None:
    assert capability_enabled(value) is enabled


# -- journal line shape ------------------------------------------------------------------------------


ROUND_TRIP_WIRES: list[dict[str, Any]] = [
    {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "hi é🙂\n"},
        "messageId": "m1",
    },
    {
        "sessionUpdate": "agent_thought_chunk",
        "content": {"type": "image", "mimeType": "image/png", "data": "x"},
    },
    {
        "sessionUpdate": "tool_call",
        "toolCallId": "c1",
        "title": "Write",
        "kind": "edit",
        "status": "in_progress",
        "content": [
            {"type": "diff", "path": "/a", "oldText": None, "newText": "new"},
            {"type": "content", "content": {"type": "text", "text": "t"}},
        ],
        "locations": [{"path": "/a", "line": 4}],
        "rawInput": {"path": "/a", "n": [1, None]},
        "rawOutput": "done",
    },
    {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "failed"},
    {"sessionUpdate": "plan", "entries": [{"content": "x", "status": "pending", "priority": "low"}]},
    {"sessionUpdate": "plan", "entries": []},
    {"sessionUpdate": "usage_update", "used": 5, "size": 10, "cost": {"amount": 0.1, "currency": "EUR"}},
    {"sessionUpdate": "available_commands_update", "availableCommands": [{"name": "x", "input": None}]},
    {"sessionUpdate": "vendor_kind", "payload": {"deep": [None, {"a": None}]}},
]


@pytest.mark.parametrize("wire", ROUND_TRIP_WIRES, ids=lambda w: w["sessionUpdate"])
def test_journal_line_round_trip(wire: dict[str, Any]) -> None:
    update = MessageIdSynthesizer().apply(must_parse(wire))
    line = json.dumps(update.to_json(), ensure_ascii=False, separators=(",", ":"))
    restored = journal_line_to_update(json.loads(line))
    assert restored == update
    assert restored is not None
    assert restored.to_json() == update.to_json()
    assert restored.raw == wire


AGENT_PAYLOADS = frozenset({"raw", "rawInput", "rawOutput"})


def _model_items(value: Any) -> list[tuple[str, Any]]:
    """Every (key, value) the models produced; the agent's own payloads (raw, rawInput…) are not walked."""
    items: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            items.append((key, item))
            if key not in AGENT_PAYLOADS:
                items.extend(_model_items(item))
    elif isinstance(value, list):
        for item in value:
            items.extend(_model_items(item))
    return items


def test_journal_json_is_camel_case_with_absent_fields_omitted() -> None:
    text = must_parse(ROUND_TRIP_WIRES[0]).to_json()
    assert text == {
        "kind": "agent_message_chunk",
        "text": "hi é🙂\n",
        "content": {"type": "text", "text": "hi é🙂\n"},
        "messageId": "m1",
        "raw": ROUND_TRIP_WIRES[0],
    }
    tool = must_parse(ROUND_TRIP_WIRES[2]).to_json()
    assert set(tool) == {"kind", "toolCall", "raw"}
    assert set(tool["toolCall"]) == {
        "toolCallId",
        "title",
        "kind",
        "status",
        "content",
        "locations",
        "rawInput",
        "rawOutput",
    }
    assert tool["toolCall"]["content"][0] == {"type": "diff", "path": "/a", "newText": "new"}
    with_old = must_parse(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "c",
            "content": [{"type": "diff", "path": "/b", "oldText": "o"}],
        }
    ).to_json()
    assert with_old["toolCall"]["content"][0]["oldText"] == "o"
    usage = must_parse(ROUND_TRIP_WIRES[6]).to_json()
    assert usage["usage"] == {"used": 5, "size": 10, "cost": {"amount": 0.1, "currency": "EUR"}}
    for wire in ROUND_TRIP_WIRES:
        items = _model_items(must_parse(wire).to_json())
        assert not [key for key, _ in items if "_" in key], "model keys must be camelCase"
        assert not [key for key, value in items if value is None], "absent fields must be omitted"


def test_silo_synthesized_user_prompt_line_round_trips_exactly() -> None:
    line = {
        "kind": "user_message_chunk",
        "text": "fix the bug",
        "content": {"type": "text", "text": "fix the bug"},
        "messageId": "silo-journal-user-1",
        "timestamp": "2026-09-01T10:00:00.000Z",
        "raw": {"synthesized": True},
    }
    update = journal_line_to_update(line)
    assert update is not None
    assert update.timestamp == "2026-09-01T10:00:00.000Z"
    assert update.message_id == "silo-journal-user-1"
    assert update.to_json() == line


@pytest.mark.parametrize("value", [None, "x", 5, [], {}, {"kind": 5}, {"kind": None}, {"text": "no kind"}])
def test_journal_line_without_string_kind_is_none(value: Any) -> None:
    assert journal_line_to_update(value) is None


def test_journal_line_with_invalid_fields_keeps_kind_and_raw() -> None:
    update = journal_line_to_update(
        {"kind": "tool_call", "toolCall": 5, "raw": {"sessionUpdate": "tool_call"}}
    )
    assert update is not None
    assert update.kind == "tool_call"
    assert update.tool_call is None
    assert update.raw == {"sessionUpdate": "tool_call"}
    broken_raw = journal_line_to_update({"kind": "plan", "plan": "nope", "raw": "nope"})
    assert broken_raw == AgentSessionUpdate(kind="plan")
