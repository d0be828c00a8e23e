"""A profile added to the user's profiles file (``%silo add-profile``): validated, never over another id.

- The entry is validated as a profile is on load (:class:`AgentProfile`; an unknown or bad key is one line
  in the profile's own words) and refused when its id is taken (by the user's file, ``$SILO_NB_PROFILES``
  or the built-in ``demo``). A site's id may be taken: the user's entry then replaces the site's, as the
  merge does (``profile_sources.py``).
- It is written as TOML by :func:`profile_toml`: every string a TOML basic string with the escapes TOML
  asks for (quotes, backslashes, control characters and DEL), keys quoted unless bare-safe, so no value
  can start a table or end the string early. The file's new text must read back (``tomllib``) with the
  entry as validated, or nothing is written.
- Appended to what is there, written atomically (a temporary file renamed over it; mode 0600 for a new
  file, since ``env`` may hold keys; an existing file keeps its mode).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from silo_nb.sessions.profiles import DEMO_PROFILE_ID, AgentProfile, AgentProfilesService, profile_error
from silo_nb.sessions.safe_files import write_named_file

__all__ = ["add_profile", "profile_toml", "toml_string"]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string."""
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else toml_string(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(str(k))} = {_value(v)}" for k, v in value.items()) + " }"
    raise ValueError(f"cannot write {type(value).__name__} to a profile")


def profile_toml(entry: Mapping[str, Any]) -> str:
    """One ``[[profiles]]`` table for ``entry`` (plain values: strings, numbers, booleans, lists, tables)."""
    lines = ["[[profiles]]"] + [f"{_key(key)} = {_value(value)}" for key, value in entry.items()]
    return "\n".join(lines) + "\n"


def _write_atomically(path: Path, text: str) -> None:
    write_named_file(path, text.encode("utf-8"), durable=True)


def add_profile(profiles: AgentProfilesService, entry: Mapping[str, Any]) -> Path:
    """Validate ``entry``, append it to ``profiles.user_file()`` and return that path; a ``ValueError``
    (one line) when it is not a valid profile, its id is taken, or the file cannot be read as TOML."""
    ident = str(entry.get("id", ""))
    try:
        AgentProfile.model_validate(dict(entry))
    except ValidationError as exc:
        raise ValueError(f'profile "{ident}": {profile_error(exc)}') from None
    origin = profiles.origin(ident) if ident != DEMO_PROFILE_ID else None
    # A site's profile (a shared server's) may be replaced by one of the user's own: that is the merge.
    if ident == DEMO_PROFILE_ID or (origin is not None and origin.source.scope != "site"):
        raise ValueError(f'a profile "{ident}" exists already (see %silo profiles) — pick another id')
    path = profiles.user_file()
    before = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        tomllib.loads(before)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path} is not valid TOML ({exc}) — fix it first; nothing was written") from None
    separator = "" if not before or before.endswith("\n\n") else ("\n" if before.endswith("\n") else "\n\n")
    text = before + separator + profile_toml(entry)
    try:
        written = tomllib.loads(text).get("profiles", [])
    except tomllib.TOMLDecodeError:  # e.g. a file holding ``profiles = [...]`` as one array
        written = None
    if not isinstance(written, list) or not written or written[-1] != dict(entry):
        raise ValueError(f"{path}: the profile would not read back as written — nothing was written")
    _write_atomically(path, text)
    return path
