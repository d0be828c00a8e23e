"""What a notebook needs beyond the demo agent, and a failed cell said in one line (``demo_notebook``'s help).

- A notebook names what it needs in its metadata, ``metadata.silo_nb``: ``extras`` (the package's extras,
  which ``bash .ci/demo`` installs before running it) and ``needs``, one entry per agent profile it
  connects to: ``{"profile": "codex", "keys": ["OPENAI_API_KEY"], "install": "how to get the agent"}``.
- :func:`missing_needs` checks each entry the way a kernel would find it: the profile in the user's profile
  files, its command on PATH, and one of its keys set (in the profile's ``env`` or the environment).
  What only the user can provide (a profile of their own, a key) is ``user_provides``: the demo then says
  so in one line and stops without failing; a missing program is a failure.
- :func:`failed_cell_line` turns nbclient's error into one line naming the cell (its number and first
  source line) with the error's name and value, free of the terminal's colour codes.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Missing", "failed_cell_line", "missing_needs", "needs_line", "notebook_extras"]

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass(frozen=True)
class Missing:
    """One thing a notebook needs and does not have; ``user_provides``: a key or a profile of the user's."""

    what: str
    user_provides: bool


def notebook_extras(metadata: Mapping[str, Any]) -> list[str]:
    """The extras ``metadata.silo_nb.extras`` names (what ``.ci/demo`` installs for the notebook)."""
    extras = metadata.get("silo_nb", {}).get("extras", [])
    return [str(extra) for extra in extras] if isinstance(extras, list) else []


def _user_profiles_file() -> str:
    from jupyter_core.paths import jupyter_config_dir

    return os.path.join(jupyter_config_dir(), "silo", "profiles.toml")


def missing_needs(metadata: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> list[Missing]:
    """What ``metadata.silo_nb.needs`` asks for that is not there, as a kernel with ``environ`` sees it."""
    from silo_nb.sessions import load_profiles, profile_files

    environ = os.environ if environ is None else environ
    needs = metadata.get("silo_nb", {}).get("needs", [])
    if not needs:
        return []
    quiet = logging.getLogger("silo_nb.profiles")
    was, quiet.disabled = quiet.disabled, True  # a broken profile file: the check below says what is missing
    try:
        profiles, _ = load_profiles(profile_files())
    finally:
        quiet.disabled = was
    missing: list[Missing] = []
    for need in needs:
        ident, keys = str(need.get("profile")), [str(key) for key in need.get("keys", [])]
        key_text = " or ".join(keys)
        profile = profiles.get(ident)
        if profile is None:
            example = need.get("example", "jupyter-config/silo/profiles.example.toml")
            with_key = f" with {key_text} in its env" if keys else ""
            where = f"copy it from {example} into {_user_profiles_file()}"
            missing.append(Missing(f'a "{ident}" profile{with_key} ({where})', True))
            continue
        if shutil.which(profile.command, path=environ.get("PATH")) is None:
            how = need.get("install", "install it")
            missing.append(Missing(f'the "{ident}" agent\'s command {profile.command!r} ({how})', False))
        if keys and not any(profile.env.get(key) or environ.get(key) for key in keys):
            missing.append(Missing(f'{key_text} for "{ident}" (in its profile\'s env)', True))
    return missing


def needs_line(notebook: str, missing: list[Missing]) -> str:
    """One line: what the notebook needs that is missing, and whether that is the user's to provide."""
    what = "; ".join(m.what for m in missing)
    if all(m.user_provides for m in missing):
        return f"{notebook} talks to real agents and needs {what}: not run (nothing is wrong with silo_nb)."
    return f"error: {notebook} needs {what}."


def failed_cell_line(index: int | None, source: str, ename: str, evalue: str) -> str:
    """``error: cell 3 (`%silo doctor codex`): UsageError: No agent profile ...`` with no colour codes."""
    first = next((line.strip() for line in source.splitlines() if line.strip()), "")
    first = first if len(first) <= 60 else first[:59] + "…"
    where = f"cell {index}" if index is not None else "a cell"
    value = " ".join(ANSI.sub("", evalue).split())
    name = ANSI.sub("", ename)
    return f"error: {where} (`{first}`): {name}: {value}" if value else f"error: {where} (`{first}`): {name}"
