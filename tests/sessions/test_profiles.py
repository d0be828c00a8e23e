"""Agent profiles: file formats, search order and problem reporting (python-api.md "Profiles")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from silo_nb.model.models import AgentProfileSummary
from silo_nb.sessions.profiles import (
    DEMO_PROFILE_ID,
    AgentProfile,
    AgentProfilesService,
    load_profiles,
    profile_files,
)
from tests.support.profiles import toml_profile, write_json, write_toml

CLAUDE_TOML = """
[[profiles]]
id = "claude"
label = "Claude Code"
agent_id = "claude"
default = true
interface = "chat"
command = "npx"
args = ["-y", "@zed-industries/claude-code-acp"]
env = { CLAUDE_CODE_USE_BEDROCK = "0" }
session_config = { mode = "plan", fast = true }
connect_timeout = 12.5
accepts_prompt = true
"""


@pytest.fixture(autouse=True)
def _no_profiles_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SILO_NB_PROFILES", raising=False)


@pytest.fixture
def system_dir(tmp_path: Path) -> Path:
    return tmp_path / "system"


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    return tmp_path / "user"


# -- discovery ---------------------------------------------------------------------------------------


def test_profile_files_order_lowest_precedence_first(
    tmp_path: Path, system_dir: Path, user_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sys_toml = write_toml(system_dir, "")
    sys_json = write_json(system_dir, {"profiles": []})
    user_toml = write_toml(user_dir, "")
    user_json = write_json(user_dir, {"profiles": []})
    env_file = tmp_path / "mine.toml"
    monkeypatch.setenv("SILO_NB_PROFILES", str(env_file))
    files = profile_files([user_dir, tmp_path / "absent", system_dir])
    assert files == [sys_toml, sys_json, user_toml, user_json, env_file]


def test_profile_files_skips_folders_without_files(tmp_path: Path) -> None:
    (tmp_path / "empty" / "silo").mkdir(parents=True)
    (tmp_path / "dir-named-like-file" / "silo" / "profiles.toml").mkdir(parents=True)
    assert profile_files([tmp_path / "empty", tmp_path / "missing", tmp_path / "dir-named-like-file"]) == []


def test_only_demo_without_files(tmp_path: Path) -> None:
    service = AgentProfilesService(config_dirs=[tmp_path])
    (demo,) = service.list()
    assert demo == AgentProfileSummary(
        id=DEMO_PROFILE_ID, label="Demo agent", is_default=False, interface="chat", agent_id="silo-demo"
    )
    assert service.problems == []
    profile = service.get("demo")
    assert profile is not None
    assert profile.command == sys.executable
    assert profile.args == ("-m", "silo_nb_agents.demo")
    assert service.get("nope") is None


# -- formats -----------------------------------------------------------------------------------------


def test_toml_profile_fields(user_dir: Path) -> None:
    write_toml(user_dir, CLAUDE_TOML)
    service = AgentProfilesService(config_dirs=[user_dir])
    profile = service.get("claude")
    assert profile is not None
    assert profile.label == "Claude Code"
    assert profile.agent_id == "claude"
    assert profile.default is True
    assert profile.command == "npx"
    assert profile.args == ("-y", "@zed-industries/claude-code-acp")
    assert profile.env == {"CLAUDE_CODE_USE_BEDROCK": "0"}
    assert profile.session_config == {"mode": "plan", "fast": True}
    assert profile.connect_timeout == 12.5
    assert profile.accepts_prompt is True
    assert service.problems == []


def test_json_profile_file(user_dir: Path) -> None:
    write_json(
        user_dir,
        {
            "profiles": [
                {"id": "gemini", "label": "Gemini", "command": "gemini", "args": ["--experimental-acp"]}
            ]
        },
    )
    service = AgentProfilesService(config_dirs=[user_dir])
    profile = service.get("gemini")
    assert profile is not None
    assert profile.args == ("--experimental-acp",)
    assert profile.connect_timeout == 60.0
    assert profile.interface == "chat"
    assert [s.id for s in service.list()] == ["demo", "gemini"]


def test_profiles_env_file_by_suffix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    json_file = tmp_path / "p.json"
    json_file.write_text(json.dumps({"profiles": [{"id": "from-json", "command": "x"}]}), encoding="utf-8")
    monkeypatch.setenv("SILO_NB_PROFILES", str(json_file))
    assert AgentProfilesService(config_dirs=[]).get("from-json") is not None
    toml_file = tmp_path / "p.toml"
    toml_file.write_text(toml_profile("from-toml"), encoding="utf-8")
    monkeypatch.setenv("SILO_NB_PROFILES", str(toml_file))
    service = AgentProfilesService(config_dirs=[])
    assert service.get("from-toml") is not None
    assert service.get("from-json") is None
    assert service.problems == []


# -- precedence --------------------------------------------------------------------------------------


def test_later_wins_per_id(
    tmp_path: Path, system_dir: Path, user_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_toml(system_dir, toml_profile("shared", label="System") + toml_profile("sys-only", label="S"))
    write_toml(user_dir, toml_profile("shared", label="User") + toml_profile("user-only", label="U"))
    service = AgentProfilesService(config_dirs=[user_dir, system_dir])
    assert {s.id: s.label for s in service.list()} == {
        "demo": "Demo agent",
        "shared": "User",
        "sys-only": "S",
        "user-only": "U",
    }
    env_file = tmp_path / "env.toml"
    env_file.write_text(toml_profile("shared", label="Env", command="env-bin"), encoding="utf-8")
    monkeypatch.setenv("SILO_NB_PROFILES", str(env_file))
    shared = service.get("shared")
    assert shared is not None
    assert shared.label == "Env"
    assert shared.command == "env-bin"
    # The winner replaces the whole profile, fields are not merged.
    assert {s.id: s.label for s in service.list()}["shared"] == "Env"


def test_json_beats_toml_in_the_same_folder(user_dir: Path) -> None:
    write_toml(user_dir, toml_profile("p", label="toml"))
    write_json(user_dir, {"profiles": [{"id": "p", "label": "json", "command": "x"}]})
    profile = AgentProfilesService(config_dirs=[user_dir]).get("p")
    assert profile is not None
    assert profile.label == "json"


def test_demo_profile_can_be_overridden(user_dir: Path) -> None:
    write_toml(user_dir, toml_profile("demo", label="My demo", command="/opt/demo"))
    service = AgentProfilesService(config_dirs=[user_dir])
    summaries = service.list()
    assert [s.id for s in summaries] == ["demo"]
    assert summaries[0].label == "My demo"
    demo = service.get("demo")
    assert demo is not None
    assert demo.command == "/opt/demo"


def test_load_profiles_always_has_demo() -> None:
    profiles, problems = load_profiles([])
    assert list(profiles) == [DEMO_PROFILE_ID]
    assert problems == []


# -- what a notebook may see -------------------------------------------------------------------------


def test_list_returns_summaries_without_command_args_or_env(user_dir: Path) -> None:
    write_toml(user_dir, CLAUDE_TOML)
    summaries = AgentProfilesService(config_dirs=[user_dir]).list()
    assert isinstance(summaries, tuple)
    assert all(isinstance(s, AgentProfileSummary) for s in summaries)
    claude = next(s for s in summaries if s.id == "claude")
    assert claude == AgentProfileSummary(
        id="claude",
        label="Claude Code",
        is_default=True,
        accepts_prompt=True,
        interface="chat",
        agent_id="claude",
    )
    for summary in summaries:
        dumped = summary.model_dump()
        assert not {"command", "args", "env", "session_config"} & set(dumped)
        assert not hasattr(summary, "command")
        text = repr(summary) + json.dumps(summary.to_json())
        assert "npx" not in text and "CLAUDE_CODE_USE_BEDROCK" not in text and sys.executable not in text


def test_label_defaults_to_id(user_dir: Path) -> None:
    write_toml(user_dir, toml_profile("nolabel"))
    (summary,) = [s for s in AgentProfilesService(config_dirs=[user_dir]).list() if s.id == "nolabel"]
    assert summary.label == "nolabel"


@pytest.mark.parametrize(
    ("defaults", "expected"),
    [
        ({}, []),
        ({"b": True}, ["b"]),
        ({"a": True, "c": True}, ["c"]),
        ({"a": True, "b": True, "c": True}, ["c"]),
    ],
)
def test_is_default_on_at_most_one(user_dir: Path, defaults: dict[str, bool], expected: list[str]) -> None:
    write_toml(
        user_dir, "".join(toml_profile(pid, default=defaults.get(pid, False)) for pid in ("a", "b", "c"))
    )
    summaries = AgentProfilesService(config_dirs=[user_dir]).list()
    assert [s.id for s in summaries if s.is_default] == expected


def test_default_from_the_more_specific_file_wins(system_dir: Path, user_dir: Path) -> None:
    write_toml(system_dir, toml_profile("mine") + toml_profile("site", default=True))
    write_toml(user_dir, toml_profile("mine", default=True))
    summaries = AgentProfilesService(config_dirs=[user_dir, system_dir]).list()
    assert [s.id for s in summaries if s.is_default] == ["mine"]


def test_terminal_interface_is_kept(user_dir: Path) -> None:
    write_toml(user_dir, toml_profile("tui", interface="terminal"))
    service = AgentProfilesService(config_dirs=[user_dir])
    (summary,) = [s for s in service.list() if s.id == "tui"]
    assert summary.interface == "terminal"
    profile = service.get("tui")
    assert profile is not None
    assert profile.interface == "terminal"


# -- problems ----------------------------------------------------------------------------------------


def test_bad_entries_are_skipped_and_reported(user_dir: Path) -> None:
    path = write_toml(
        user_dir,
        toml_profile("good")
        + toml_profile("Bad_ID")
        + '[[profiles]]\nid = "no-command"\n'
        + toml_profile("unknown-key", shell="bash -c")
        + toml_profile("zero-timeout", connect_timeout=0)
        + toml_profile("negative-timeout", connect_timeout=-1)
        + toml_profile("empty-command", command="")
        + toml_profile("bad-interface", interface="gui")
        + toml_profile("ok-timeout", connect_timeout=0.5),
    )
    service = AgentProfilesService(config_dirs=[user_dir])
    ids = [s.id for s in service.list()]
    assert ids == ["demo", "good", "ok-timeout"]
    assert len(service.problems) == 7
    for problem, bad_id in zip(
        service.problems,
        [
            "Bad_ID",
            "no-command",
            "unknown-key",
            "zero-timeout",
            "negative-timeout",
            "empty-command",
            "bad-interface",
        ],
        strict=True,
    ):
        assert str(path) in problem
        assert bad_id in problem
    assert "command" in service.problems[1]
    assert "shell" in service.problems[2]
    assert "connect_timeout" in service.problems[3]
    ok = service.get("ok-timeout")
    assert ok is not None
    assert ok.connect_timeout == 0.5


def test_a_misspelt_key_is_named_with_the_closest_one_and_cited_for_its_own_profile(user_dir: Path) -> None:
    write_toml(user_dir, toml_profile("first", shell="bash") + toml_profile("second", lable="Second"))
    service = AgentProfilesService(config_dirs=[user_dir])
    assert [s.id for s in service.list()] == ["demo"]
    assert service.problems[1].endswith('profile second: unknown key "lable" — did you mean "label"?')
    keys = "see the profile keys (docs/profiles-and-agents.md)"
    assert service.problems[0].endswith(f'profile first: unknown key "shell" — {keys}')
    assert service.problems.about("second") == service.problems[1]
    assert service.problems.about("third") is None  # a profile that was never there cites no one else's


@pytest.mark.parametrize("bad_id", ["", "-lead", "UPPER", "has space", "dot.ted", "under_score", "é"])
def test_bad_id_pattern_is_rejected(user_dir: Path, bad_id: str) -> None:
    path = write_json(
        user_dir, {"profiles": [{"id": bad_id, "command": "x"}, {"id": "ok-1", "command": "x"}]}
    )
    profiles, problems = load_profiles(profile_files([user_dir]))
    assert list(profiles) == ["demo", "ok-1"]
    assert len(problems) == 1
    assert problems[0].startswith(f"{path}: profile ")
    assert "id" in problems[0]


def test_non_table_entries_are_reported_by_position(user_dir: Path) -> None:
    path = write_json(user_dir, {"profiles": [5, {"id": "fine", "command": "x"}, "str"]})
    service = AgentProfilesService(config_dirs=[user_dir])
    assert service.get("fine") is not None
    assert len(service.problems) == 2
    assert f"{path}: profile #1" in service.problems[0]
    assert f"{path}: profile #3" in service.problems[1]


@pytest.mark.parametrize(
    ("writer", "content"),
    [
        (write_toml, "[[profiles]\nid = "),
        (write_toml, 'profiles = "not a list"'),
        (write_json, "{not json"),
        (write_json, '{"profiles": {"id": "x"}}'),
        (write_json, "5"),
    ],
    ids=["broken-toml", "toml-profiles-not-list", "broken-json", "json-profiles-not-list", "json-scalar"],
)
def test_broken_file_is_skipped_and_reported(
    system_dir: Path, user_dir: Path, writer: Any, content: str
) -> None:
    write_toml(system_dir, toml_profile("from-system"))
    path = writer(user_dir, "")
    path.write_text(content, encoding="utf-8")
    service = AgentProfilesService(config_dirs=[user_dir, system_dir])
    assert [s.id for s in service.list()] == ["demo", "from-system"]
    assert len(service.problems) == 1
    assert service.problems[0].startswith(f"{path}: ")


def test_undecodable_file_is_reported(user_dir: Path) -> None:
    path = write_toml(user_dir, "")
    path.write_bytes(b"\xff\xfe\x00garbage")
    service = AgentProfilesService(config_dirs=[user_dir])
    assert [s.id for s in service.list()] == ["demo"]
    assert len(service.problems) == 1
    assert str(path) in service.problems[0]


def test_missing_profiles_env_file_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "nope.toml"
    monkeypatch.setenv("SILO_NB_PROFILES", str(missing))
    service = AgentProfilesService(config_dirs=[])
    assert [s.id for s in service.list()] == ["demo"]
    assert service.problems == [f"{missing}: file not found"]


def test_problems_are_refreshed_on_each_load(user_dir: Path) -> None:
    path = write_toml(user_dir, "[[profiles]\n")
    service = AgentProfilesService(config_dirs=[user_dir])
    service.list()
    assert len(service.problems) == 1
    path.write_text(toml_profile("fixed"), encoding="utf-8")
    assert [s.id for s in service.list()] == ["demo", "fixed"]
    assert service.problems == []


def test_connect_timeout_must_be_positive() -> None:
    for bad in (0, -0.1, -5):
        with pytest.raises(ValueError, match="connect_timeout"):
            AgentProfile(id="x", command="c", connect_timeout=bad)
    assert AgentProfile(id="x", command="c", connect_timeout=0.01).connect_timeout == 0.01


# -- relative commands -------------------------------------------------------------------------------


def _script(path: Path, says: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho {says}\n", encoding="utf-8")
    path.chmod(0o755)


@pytest.mark.parametrize("command", ["./bin/agent", "bin/agent", "tools/../bin/agent"])
def test_a_relative_command_is_the_profile_files_never_the_sessions_cwd(
    tmp_path: Path, user_dir: Path, command: str
) -> None:
    import anyio

    from silo_nb.acp.process import AgentProcess

    profiles = write_toml(user_dir, toml_profile("local", command=command))
    _script(profiles.parent / "bin" / "agent", "profile-folder")
    session_cwd = tmp_path / "project"
    _script(session_cwd / "bin" / "agent", "decoy-in-cwd")
    (session_cwd / "tools").mkdir()

    profile = load_profiles([profiles])[0]["local"]
    assert profile.command == str(profiles.parent / "bin" / "agent")

    async def run() -> bytes:
        process = await AgentProcess.spawn(profile.command, profile.args, cwd=str(session_cwd))
        output = await process.stdout.receive()
        await process.wait(5)
        return output

    assert anyio.run(run).strip() == b"profile-folder"


def test_bare_and_absolute_commands_are_left_alone(user_dir: Path) -> None:
    profiles = write_toml(
        user_dir, toml_profile("bare", command="npx") + toml_profile("abs", command="/usr/bin/env")
    )
    loaded = load_profiles([profiles])[0]
    assert loaded["bare"].command == "npx" and loaded["abs"].command == "/usr/bin/env"


def test_a_home_relative_command_is_expanded(user_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(user_dir))
    profiles = write_toml(user_dir, toml_profile("home", command="~/bin/agent"))
    assert load_profiles([profiles])[0]["home"].command == str(user_dir / "bin" / "agent")


def test_unset_env_keeps_a_kernel_variable_from_the_agent_and_from_sign_in(
    user_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TOML has no null: ``unset_env`` names what the agent must not inherit; ``env`` still wins for a
    name in both. A variable it removes no longer counts as set for an ``env_var`` sign-in either."""
    from silo_nb.model import AuthMethod
    from silo_nb.sessions.connecting.auth_methods import choose_method

    write_toml(
        user_dir,
        toml_profile("claude", unset_env=["IS_SANDBOX", "OPENAI_API_KEY", "BOTH"])
        + 'env = { BOTH = "kept" }\n',
    )
    profile = AgentProfilesService(config_dirs=[user_dir]).get("claude")
    assert profile is not None
    assert profile.spawn_env == {"IS_SANDBOX": None, "OPENAI_API_KEY": None, "BOTH": "kept"}
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-kernel")
    method = AuthMethod(id="openai-api-key", name="OpenAI key", type="env_var", variables=("OPENAI_API_KEY",))
    assert choose_method([method], {}, None) == method  # inherited: used
    assert choose_method([method], profile.spawn_env, None) is None  # unset by the profile: not


def test_unset_env_must_be_a_list_of_names(user_dir: Path) -> None:
    write_toml(user_dir, toml_profile("bad", unset_env="IS_SANDBOX"))
    service = AgentProfilesService(config_dirs=[user_dir])
    assert service.get("bad") is None
    assert any("unset_env" in problem for problem in service.problems)


def test_a_huge_profiles_file_is_skipped_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 21: a 50 MB profiles file took 20 s to list (on every %silo profiles and connect)."""
    from silo_nb.sessions.profiles import MAX_PROFILES_FILE_BYTES

    huge = tmp_path / "profiles.json"
    huge.write_text('{"profiles": [' + ",".join(['{"id": "x", "command": "true"}'] * 400_000) + "]}")
    assert huge.stat().st_size > MAX_PROFILES_FILE_BYTES
    monkeypatch.setenv("SILO_NB_PROFILES", str(huge))
    service = AgentProfilesService([])
    assert [p.id for p in service.list()] == ["demo"]
    (problem,) = service.problems
    assert "over the 1 MiB limit" in problem and str(huge) in problem and "\n" not in problem


def test_a_fifo_named_as_the_profiles_file_never_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 21: a FIFO where the profiles file is looked for is skipped in one line, never opened for a
    blocking read (nobody ever writes to it: a blocking open would hang the kernel for good). Run in a
    child process with a deadline, so a regression fails instead of hanging the suite."""
    fifo = tmp_path / "profiles.json"
    os.mkfifo(fifo)
    probe = (
        "from silo_nb.sessions.profiles import AgentProfilesService\n"
        "service = AgentProfilesService([])\n"
        "print([p.id for p in service.list()])\n"
        "print(len(service.problems), 'not a regular file' in service.problems[0])\n"
    )
    env = {**os.environ, "SILO_NB_PROFILES": str(fifo)}
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == ["['demo']", "1 True"]
