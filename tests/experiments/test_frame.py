"""``silo_nb.frame``: journals (Silo's own format, and live demo sessions) → one row per turn."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import silo_nb
from silo_nb.experiments.rows import turn_rows
from silo_nb.sessions.journal import parse_lines
from tests.conftest import Workspace, demo_agent

HERE = Path(__file__).resolve().parent
SILO_FIXTURE = HERE / "silo-format.jsonl"


def test_frame_of_a_journal_in_silos_format() -> None:
    df = silo_nb.frame(SILO_FIXTURE)
    assert len(df) == 2  # the torn last line is skipped; the handshake lines make no row
    first, second = df.iloc[0], df.iloc[1]
    assert first["session"] == "silo-format"  # the file name is the session id
    assert first["prompt"] == "Summarise data.csv" and second["prompt"] == "Now run the tests"
    assert first["started"] == pd.Timestamp("2026-03-02T10:00:00Z")
    assert first["updates"] == 6 and second["updates"] == 6  # the agent's own lines, prompt excluded
    assert first["tool_calls"] == 1 and first["tool_kind_read"] == 1 and first["tool_status_completed"] == 1
    assert second["tool_calls"] == 2 and second["tool_status_failed"] == 1 and second["tool_kind_edit"] == 1
    assert second["tool_kind_execute"] == 1 and second["tool_kind_read"] == 0
    assert first["text"] == "The file has 3 rows." and second["text"] == "One test fails; I fixed it."
    assert first["tokens_used"] == 5400 and second["tokens_used"] == 9100 and first["context_size"] == 200000
    assert first["cost"] == pytest.approx(0.021) and second["cost"] == pytest.approx(0.014)
    assert second["cost_total"] == pytest.approx(0.035) and second["currency"] == "USD"
    assert first["mode"] == "acceptEdits"  # from the journal's current_mode_update
    # Silo keeps no turn record: what only silo_nb journals is empty, not invented.
    assert first["stop_reason"] is None and pd.isna(first["duration_s"]) and first["profile"] is None
    assert first["permissions_asked"] == 0


def test_rows_split_agent_initiated_work_after_a_turn_end() -> None:
    lines = [
        {"kind": "user_message_chunk", "text": "hi", "raw": {"synthesized": True}},
        {"kind": "agent_message_chunk", "text": "hello", "raw": {}},
        {"kind": "turn_end", "raw": {"synthesized": True, "stopReason": "end_turn", "durationMs": 1500}},
        {"kind": "agent_message_chunk", "text": "a background job finished", "raw": {}},
    ]
    rows = turn_rows(parse_lines(json.dumps(line) for line in lines), session="s")
    assert [(r["prompt"], r["stop_reason"], r["duration_s"], r["text"]) for r in rows] == [
        ("hi", "end_turn", 1.5, "hello"),
        (None, None, None, "a background job finished"),
    ]


async def test_frame_of_a_live_demo_session_counts_turns_tools_and_permissions(workspace: Workspace) -> None:
    workspace.add_profiles(demo_agent("demo-sub"))
    svc = workspace.service(subprocess=True)
    async with await svc.sessions.connect("demo-sub", cwd=str(workspace.folder)) as handle:
        handle.on_permission(silo_nb.PermissionPolicy("allow edit inside"))
        await handle.set_config_option("model", "demo-smart")
        await handle.prompt([{"type": "text", "text": "please edit notes"}])
        await handle.prompt([{"type": "text", "text": "plan it"}])
        await handle.prompt([{"type": "text", "text": "refuse this"}])
        df = silo_nb.frame(handle)
        session_id = handle.session_id
    assert list(df["turn"]) == [1, 2, 3]
    assert list(df["stop_reason"]) == ["end_turn", "end_turn", "refusal"]
    edit = df.iloc[0]
    assert (
        edit["profile"] == "demo-sub" and edit["agent"] == "Silo demo agent" and edit["model"] == "demo-smart"
    )
    assert edit["permissions_asked"] == 1 and edit["permissions_allowed"] == 1
    assert edit["tool_calls"] == 2 and edit["tool_status_completed"] == 2
    assert edit["duration_s"] > 0 and edit["cost"] > 0
    assert df.iloc[1]["cost"] == pytest.approx(df.iloc[1]["cost_total"] - edit["cost_total"])
    assert pd.isna(df.iloc[2]["tokens_used"])  # the demo reports no usage for a refusal: none invented
    # The same rows from the journal on disk.
    from_disk = silo_nb.frame(svc.sessions.journals.path(svc.workspace_id, session_id))
    pd.testing.assert_frame_equal(from_disk.drop(columns="config"), df.drop(columns="config"))


def test_frame_by_session_id_reads_this_workspaces_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SILO_NB_DATA_DIR", str(tmp_path))
    folder = tmp_path / "workspaces" / "ws-1" / "chat-sessions"
    folder.mkdir(parents=True)
    (folder / "abc-123.jsonl").write_bytes(SILO_FIXTURE.read_bytes())
    assert len(silo_nb.frame("abc-123", workspace_id="ws-1")) == 2
    assert list(silo_nb.frame([folder, SILO_FIXTURE])["session"]) == ["abc-123"] * 2 + ["silo-format"] * 2
    with pytest.raises(FileNotFoundError, match=r"No journal for session 'nope' in workspace 'ws-1'"):
        silo_nb.frame("nope", workspace_id="ws-1")
    with pytest.raises(FileNotFoundError, match="check the path"):
        silo_nb.frame(str(tmp_path / "missing.jsonl"))
    with pytest.raises(TypeError, match="takes a session handle, a journal path"):
        silo_nb.frame(42)


def test_without_pandas_the_message_says_what_to_install() -> None:
    code = (
        "import sys; sys.modules['pandas'] = None\n"
        "import silo_nb\n"
        "try:\n    silo_nb.frame(sys.argv[1])\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(SILO_FIXTURE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert 'pip install "silo-nb[frame]"' in result.stdout
