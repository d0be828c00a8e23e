"""``jupyter-config/silo/profiles.example.toml``: every commented-out profile is valid once uncommented."""

from __future__ import annotations

import json
import re
import tomllib

from silo_nb.sessions.profiles import AgentProfile
from tests.conftest import ROOT


def test_example_profiles_are_valid_when_uncommented() -> None:
    text = (ROOT / "jupyter-config" / "silo" / "profiles.example.toml").read_text()
    lines = [
        re.sub(r"^# ?", "", line) for line in text.splitlines() if re.match(r"^# (\[\[|[a-z_]+ = )", line)
    ]
    profiles = [AgentProfile.model_validate(p) for p in tomllib.loads("\n".join(lines))["profiles"]]
    by_id = {p.id: p for p in profiles}
    assert list(by_id) == ["claude", "codex", "gemini", "opencode", "pi", "qwen", "copilot"]
    assert by_id["claude"].spawn_env == {"IS_SANDBOX": None, "ANTHROPIC_API_KEY": "sk-ant-..."}
    assert by_id["codex"].env == {"OPENAI_API_KEY": "sk-..."} and by_id["gemini"].cancel_timeout == 3
    assert by_id["pi"].args[-1] == "pi-acp"
    assert list(by_id["qwen"].args[-4:]) == ["--auth-type", "openai", "--model", "qwen3-coder-plus"]
    # The versions are the ones the tests pin (tests/node/package.json).
    pinned = json.loads((ROOT / "tests" / "node" / "package.json").read_text())["dependencies"]
    for profile in profiles:
        for arg in profile.args:
            if "@" in arg[1:]:
                name, _, version = arg.rpartition("@")
                assert pinned[name] == version, arg
