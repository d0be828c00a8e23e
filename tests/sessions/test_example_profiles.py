"""``jupyter-config/silo/profiles.example.toml``: every commented-out profile is valid once uncommented."""

from __future__ import annotations

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
    assert [p.id for p in profiles] == ["codex", "gemini", "claude"]
    assert profiles[0].env == {"CODEX_API_KEY": "sk-..."} and profiles[1].cancel_timeout == 3
    assert profiles[2].spawn_env == {"IS_SANDBOX": None, "ANTHROPIC_API_KEY": "sk-ant-..."}
