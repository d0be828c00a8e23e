"""ATIF trajectories (issue 33 item 3): a real demo-agent session and a grid run of it exported, each file
checked against the ATIF shape of Harbor's own models (``harbor.models.trajectories``, harbor 0.26: it needs
Python >= 3.12 and brings litellm, fastapi, supabase…, so it is not installed here; :func:`check_atif` is
their rules, written from its source), a subagent's traffic, bounds, and the bad-format one-liner."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from IPython.core.interactiveshell import InteractiveShell

import silo_nb
from silo_nb.experiments.atif import SCHEMA_VERSION, TEXT_LIMIT, trajectory
from silo_nb.model import AgentSessionUpdate
from tests.agents.scripted import Peer, scripted_service
from tests.agents.subagent_turns import CHILD, delegate
from tests.conftest import Workspace
from tests.support.shell import run, shell  # noqa: F401  (a fixture)

VERSIONS = {f"ATIF-v1.{n}" for n in range(9)}
_FIELDS = {
    "trajectory": {
        "schema_version",
        "session_id",
        "trajectory_id",
        "agent",
        "steps",
        "notes",
        "final_metrics",
    }
    | {"continued_trajectory_ref", "extra", "subagent_trajectories"},
    "agent": {"name", "version", "model_name", "tool_definitions", "extra"},
    "step": {
        "step_id",
        "timestamp",
        "source",
        "model_name",
        "reasoning_effort",
        "message",
        "reasoning_content",
    }
    | {"tool_calls", "observation", "metrics", "is_copied_context", "llm_call_count", "extra"},
    "tool_call": {"tool_call_id", "function_name", "arguments", "extra"},
    "result": {"source_call_id", "content", "subagent_trajectory_ref", "extra"},
    "metrics": {"prompt_tokens", "completion_tokens", "cached_tokens", "cost_usd", "prompt_token_ids"}
    | {"completion_token_ids", "logprobs", "extra"},
    "final_metrics": {"total_prompt_tokens", "total_completion_tokens", "total_cached_tokens"}
    | {"total_cost_usd", "total_steps", "extra"},
}
_AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")


def _only(value: Any, kind: str) -> None:
    assert isinstance(value, dict), f"{kind}: not an object"
    extra = set(value) - _FIELDS[kind]
    assert not extra, f"{kind}: unknown fields {sorted(extra)}"  # Harbor's models forbid extras


def check_atif(document: Mapping[str, Any]) -> None:
    """Harbor's ``Trajectory`` rules (``extra: forbid`` everywhere, required fields, sequential step ids,
    agent-only fields, observation → tool call of the same step, embedded subagents' unique ids)."""
    _only(document, "trajectory")
    assert document["schema_version"] in VERSIONS
    _only(document["agent"], "agent")
    assert isinstance(document["agent"]["name"], str) and isinstance(document["agent"]["version"], str)
    steps = document["steps"]
    assert isinstance(steps, list) and steps, "steps: at least one"
    for index, step in enumerate(steps):
        _only(step, "step")
        assert step["step_id"] == index + 1, "step ids are sequential from 1"
        assert step["source"] in ("system", "user", "agent")
        assert isinstance(step["message"], str)
        if "timestamp" in step:
            from datetime import datetime

            datetime.fromisoformat(step["timestamp"].replace("Z", "+00:00"))
        if step["source"] != "agent":
            assert not [name for name in _AGENT_ONLY if step.get(name) is not None]
        ids = set()
        for call in step.get("tool_calls") or ():
            _only(call, "tool_call")
            assert isinstance(call["tool_call_id"], str) and isinstance(call["function_name"], str)
            assert isinstance(call["arguments"], dict)
            ids.add(call["tool_call_id"])
        if "observation" in step:
            assert set(step["observation"]) == {"results"}
            for result in step["observation"]["results"]:
                _only(result, "result")
                if result.get("source_call_id") is not None:
                    assert result["source_call_id"] in ids, "an observation answers a call of its step"
                for ref in result.get("subagent_trajectory_ref") or ():
                    assert ref.get("trajectory_id") or ref.get("trajectory_path")
        if "metrics" in step:
            _only(step["metrics"], "metrics")
    if "final_metrics" in document:
        _only(document["final_metrics"], "final_metrics")
    seen: set[str] = set()
    for sub in document.get("subagent_trajectories") or ():
        check_atif(sub)
        assert sub["trajectory_id"] and sub["trajectory_id"] not in seen
        seen.add(sub["trajectory_id"])
    json.dumps(document, allow_nan=False)  # plain JSON


def text(value: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": value}]


async def test_a_demo_session_with_an_edit_exports_a_valid_trajectory(
    workspace: Workspace, tmp_path: Path
) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        handle.on_permission(silo_nb.PermissionPolicy("allow *"))
        await handle.set_config_option("model", "demo-smart")
        await handle.prompt(text("please edit notes"))
        await handle.prompt(text("hello there"))
        (written,) = silo_nb.export_trajectories(handle, tmp_path / "live")
        session_id = handle.session_id
    document = json.loads(written.read_text())
    check_atif(document)
    assert written == tmp_path / "live" / "trajectory.json"
    assert document["schema_version"] == SCHEMA_VERSION == "ATIF-v1.8"
    assert document["session_id"] == session_id
    agent = document["agent"]
    assert agent["name"] and agent["version"] != "unknown" and agent["model_name"] == "demo-smart"
    steps = document["steps"]
    assert [s["source"] for s in steps] == ["user", "agent", "user", "agent"]
    assert steps[0]["message"] == "please edit notes" and steps[2]["message"] == "hello there"
    edit = steps[1]
    assert edit["message"] and edit["tool_calls"], edit
    results = {r["source_call_id"]: r for r in edit["observation"]["results"]}
    assert set(results) == {c["tool_call_id"] for c in edit["tool_calls"]}
    assert any("notes.md" in (r["content"] or "") for r in results.values())
    assert any(c.get("extra", {}).get("permission", "").startswith("allow") for c in edit["tool_calls"])
    assert edit["extra"]["stop_reason"] == "end_turn"
    assert edit["metrics"].get("cost_usd", 0) > 0 or edit["metrics"].get("prompt_tokens") is not None
    assert document["final_metrics"]["total_steps"] == 4
    # The same trajectory from the journal on disk, by session id; and written the same, byte for byte.
    os.environ["SILO_NB_DATA_DIR"] = str(svc.sessions.journals.data_dir)
    try:
        again = silo_nb.export_trajectories(
            svc.sessions.journals.path(svc.workspace_id, session_id), tmp_path / "disk"
        )
    finally:
        os.environ.pop("SILO_NB_DATA_DIR", None)
    from_disk = json.loads(again[0].read_text())
    check_atif(from_disk)
    assert from_disk["steps"] == steps


def test_a_bad_format_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^format must be 'atif' — not 'json'\.$"):
        silo_nb.export_trajectories("nothing", tmp_path, format="json")


async def test_a_subagent_s_traffic_is_an_embedded_trajectory(workspace: Workspace) -> None:
    answers: list[Any] = []

    async def turn(peer: Peer, _text: str) -> None:
        await delegate(peer, answers)

    svc = scripted_service(workspace, turn)
    async with await svc.sessions.connect("scripted") as handle:
        handle.on_permission(lambda request: request.respond("allow"))
        await handle.prompt(text("go"))
        document = trajectory(handle.journal_updates(), session_id=handle.session_id)
    check_atif(document)
    agent_step = document["steps"][1]
    assert agent_step["message"] == "Delegating.All done."  # the child's words are its own
    refs = [ref for r in agent_step["observation"]["results"] for ref in r.get("subagent_trajectory_ref", ())]
    assert [ref["trajectory_id"] for ref in refs] == [CHILD, "ghost-9"]
    child, ghost = document["subagent_trajectories"]
    assert child["trajectory_id"] == CHILD and child["agent"]["name"] == "Explorer"
    assert child["steps"][0]["message"] == "Child here, done."
    assert ghost["steps"][0]["message"] == "Who am I?"


def test_long_texts_are_cut_with_a_marker_and_the_output_is_deterministic() -> None:
    long = "x" * (TEXT_LIMIT + 5)
    updates = [
        AgentSessionUpdate(kind="user_message_chunk", text="go", raw={"synthesized": True}),
        AgentSessionUpdate(kind="agent_message_chunk", text=long),
        AgentSessionUpdate(kind="turn_end", raw={"synthesized": True, "stopReason": "end_turn"}),
    ]
    first = trajectory(updates, session_id="s")
    check_atif(first)
    assert first["steps"][1]["message"].endswith("[5 characters left out]")
    assert json.dumps(first) == json.dumps(trajectory(updates, session_id="s"))
    with pytest.raises(ValueError, match="no trajectory"):
        trajectory([])


@pytest.fixture
def demo_env(tmp_path: Path) -> Iterator[Path]:
    saved = {
        k: os.environ.get(k) for k in ("SILO_NB_DEMO_STATE_DIR", "SILO_NB_DEMO_DELAY", "SILO_NB_PROFILES")
    }
    os.environ.update(SILO_NB_DEMO_STATE_DIR=str(tmp_path / "demo-state"), SILO_NB_DEMO_DELAY="0")
    os.environ.pop("SILO_NB_PROFILES", None)
    yield tmp_path
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def test_a_grid_run_exports_one_trajectory_per_cell(demo_env: Path) -> None:
    table = anyio.run(
        lambda: silo_nb.run_grid(
            ["please edit notes.md", "hello there"],
            configs=[{"model": "demo-fast"}],
            repeats=2,
            policy=silo_nb.PermissionPolicy("allow *"),
            name="atif",
            folder=demo_env / "runs",
            config_dirs=[],
            progress=False,
            timeout=60.0,
        )
    )
    written = silo_nb.export_trajectories(table, demo_env / "out")
    cells = list(dict.fromkeys(table["cell"]))
    assert written == [demo_env / "out" / cell / "trajectory.json" for cell in cells]
    for path in written:
        document = json.loads(path.read_text())
        check_atif(document)
        assert (
            document["extra"]["cell"] == path.parent.name and document["agent"]["model_name"] == "demo-fast"
        )
    edits = [
        json.loads(p.read_text())
        for p in written
        if "edit" in json.loads(p.read_text())["steps"][0]["message"]
    ]
    assert len(edits) == 2 and all(doc["steps"][1].get("tool_calls") for doc in edits)
    # The run's folder gives the same files.
    again = silo_nb.export_trajectories(table.attrs["run_folder"], demo_env / "again")
    assert [p.read_text() for p in again] == [p.read_text() for p in written]


async def test_the_export_magic_writes_a_session_s_trajectory(
    shell: InteractiveShell,  # noqa: F811
    tmp_path: Path,
) -> None:
    await run(shell, "%silo connect demo")
    await run(shell, "%%prompt\nhello there")
    captured, result = await run(shell, f"%silo export demo --atif --out {tmp_path}")
    assert result.success, captured.stderr
    document = json.loads((tmp_path / "trajectory.json").read_text())
    check_atif(document)
    assert [s["source"] for s in document["steps"]] == ["user", "agent"]
    assert document["steps"][0]["message"] == "hello there" and "2 steps (ATIF-v1.8)" in captured.stdout
    captured, result = await run(shell, f"%silo export demo {tmp_path / 'again.json'} --atif")
    assert (
        result.success and (tmp_path / "again.json").read_text() == (tmp_path / "trajectory.json").read_text()
    )
    # Without --atif the page export is as before; --out alone is one line.
    captured, result = await run(shell, f"%silo export demo --out {tmp_path / 'x.md'}")
    assert not result.success and "NAME --atif [--out PATH]" in captured.stderr + captured.stdout
    captured, result = await run(shell, f"%silo export demo {tmp_path / 'chat.md'}")
    assert result.success and (tmp_path / "chat.md").is_file()
