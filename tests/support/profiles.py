"""Profile files as a user writes them (``profiles.toml`` / ``profiles.json`` under a config folder)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_toml(config_dir: Path, text: str) -> Path:
    path = config_dir / "silo" / "profiles.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_json(config_dir: Path, data: Any) -> Path:
    path = config_dir / "silo" / "profiles.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def toml_profile(profile_id: str, **fields: Any) -> str:
    fields.setdefault("command", "agent-bin")
    lines = ["[[profiles]]", f"id = {json.dumps(profile_id)}"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in fields.items()]
    return "\n".join(lines) + "\n"
