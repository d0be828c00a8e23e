"""Agent profiles: user-authored files only. A notebook can *name* a profile, never define one.

Search order, later wins per id: the built-in ``demo``; each ``silo/profiles.toml`` or
``silo/profiles.json`` on the Jupyter config path, from the most general folder (system) to the most
specific (the user's); then the file ``$SILO_NB_PROFILES`` (``.toml`` or ``.json`` by suffix).
A broken file or entry is skipped with a warning and remembered, so "no profile named X" can say why.

- ``auth_method`` pins the agent's sign-in method (an id from its ``authMethods``); ``cancel_timeout`` bounds
  how long a Stop waits for the agent to end the turn (see ``sessions/auth_methods.py``,
  ``session/handle.py``); ``request_timeout`` bounds every other request outside a connect (config
  options, ``session/list``, ``session/delete``, ``logout``).
- ``command``: a bare name (``npx``) is looked up on PATH when the agent starts; a path with a slash that
  is relative (``./bin/agent``, ``tools/agent``) is made absolute here, at load time, against the folder
  of the profile file it is written in (as named, symlinks not resolved), so it never depends on a
  session's ``cwd`` or the kernel's; ``~`` is expanded.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from silo_nb.sessions.mcp_servers import McpServerConfig
from silo_nb.sessions.models import AgentProfileSummary
from silo_nb.sessions.safe_files import open_file

__all__ = [
    "DEMO_PROFILE_ID",
    "MAX_PROFILES_FILE_BYTES",
    "AgentProfile",
    "AgentProfilesService",
    "load_profiles",
    "profile_files",
]

log = logging.getLogger("silo_nb.profiles")

DEMO_PROFILE_ID = "demo"
MAX_PROFILES_FILE_BYTES = 1 << 20  # a profiles file is a few kilobytes; a 50 MB one took 20 s to list


class AgentProfile(BaseModel):
    """One profile as the user wrote it (host-internal: never handed to notebook code as is)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)  # schema built on first use

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    label: str = ""
    agent_id: str | None = None
    default: bool = False
    interface: Literal["chat", "terminal"] = "chat"
    command: str = Field(min_length=1)
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    # Variables of the kernel's environment the agent must not inherit (TOML has no null to say it in
    # ``env``): e.g. ``IS_SANDBOX``, with which claude-agent-acp refuses to run as root.
    unset_env: tuple[str, ...] = ()
    session_config: dict[str, str | bool] = Field(default_factory=dict)
    connect_timeout: float = Field(default=60.0, gt=0)
    # How long a Stop waits for the agent to answer ``session/cancel`` before saying it did not stop.
    cancel_timeout: float = Field(default=3.0, gt=0)
    # Every other request that is neither part of a connect nor a turn (set_config_option, set_mode and
    # set_model, session/list, session/delete, logout): an agent that never answers fails it after this.
    request_timeout: float = Field(default=30.0, gt=0)
    # An ``authMethods`` id to authenticate with before every session (else: an env_var method whose
    # variables are set in ``env`` or the kernel's environment, if any).
    auth_method: str | None = None
    accepts_prompt: bool = False
    # What the agent may ask of the client (ACP's fs/*, terminal/*): see session/client_files.py and
    # session/terminals.py. Folders besides the session's cwd it may read and write (also sent to it as
    # additionalDirectories); relative ones are against the workspace folder.
    additional_directories: tuple[str, ...] = ()
    fs_read: bool = True
    fs_write: bool = True
    fs_write_notebooks: bool = False  # a raw write under an open notebook corrupts it
    fs_max_bytes: int = Field(default=10 * 1024 * 1024, gt=0)  # the largest file read or written
    terminal: bool = True
    max_terminals: int = Field(default=16, gt=0)  # terminals alive at once per session
    mcp_servers: tuple[McpServerConfig, ...] = ()

    @property
    def spawn_env(self) -> dict[str, str | None]:
        """What the agent's environment changes from the kernel's: ``env``'s values, ``None`` to unset."""
        return {**dict.fromkeys(self.unset_env), **self.env}

    @property
    def display_label(self) -> str:
        return self.label or self.id

    def summary(self, *, is_default: bool) -> AgentProfileSummary:
        return AgentProfileSummary(
            id=self.id,
            label=self.display_label,
            is_default=is_default,
            accepts_prompt=self.accepts_prompt,
            interface=self.interface,
            agent_id=self.agent_id,
        )


def demo_profile() -> AgentProfile:
    return AgentProfile(
        id=DEMO_PROFILE_ID,
        label="Demo agent",
        agent_id="silo-demo",
        command=sys.executable,
        args=("-m", "silo_nb.demo_agent"),
        connect_timeout=60.0,
    )


def profile_files(config_dirs: Iterable[str | os.PathLike[str]] | None = None) -> list[Path]:
    """Candidate files in precedence order (lowest first). ``config_dirs`` is most specific first."""
    if config_dirs is None:
        from jupyter_core.paths import jupyter_config_path

        config_dirs = jupyter_config_path()
    files: list[Path] = []
    for folder in reversed([Path(d) for d in config_dirs]):
        for name in ("profiles.toml", "profiles.json"):
            candidate = folder / "silo" / name
            if candidate.is_file():
                files.append(candidate)
    override = os.environ.get("SILO_NB_PROFILES")
    if override:
        files.append(Path(override).expanduser())
    return files


def _read_file(path: Path) -> list[Any]:
    fd = open_file(path, os.O_RDONLY, root=None)  # a regular file: a FIFO named there never blocks
    try:
        size = os.fstat(fd).st_size
        if size > MAX_PROFILES_FILE_BYTES:
            raise ValueError(
                f"{size:,} bytes, over the 1 MiB limit for a profiles file — skipped (a profiles file is a "
                "few kilobytes: check it is the right file)"
            )
        raw = os.read(fd, MAX_PROFILES_FILE_BYTES + 1)
    finally:
        os.close(fd)
    text = raw.decode("utf-8")
    data: Any = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    if isinstance(data, dict):
        data = data.get("profiles", [])
    if not isinstance(data, list):
        raise ValueError('expected a "profiles" list')
    return data


def _anchored(profile: AgentProfile, folder: Path) -> AgentProfile:
    """``profile`` with a relative command path made absolute against its file's ``folder``."""
    command = os.path.expanduser(profile.command)
    has_slash = os.sep in command or (os.altsep is not None and os.altsep in command)
    if not has_slash:
        return profile  # a bare name: PATH, when the agent starts
    if not os.path.isabs(command):
        command = os.path.normpath(os.path.join(os.path.abspath(folder), command))
    return profile if command == profile.command else profile.model_copy(update={"command": command})


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error.get("loc", ()))
    return f"{where}: {error.get('msg', 'invalid')}" if where else str(error.get("msg", "invalid"))


def load_profiles(
    files: Iterable[Path], *, warned: set[Warned] | None = None
) -> tuple[dict[str, AgentProfile], list[str]]:
    """Profiles by id (built-in demo first, later files win), and one line per problem found; each
    problem is logged once per state of the files it notes in ``warned`` (every time without one)."""
    profiles: dict[str, AgentProfile] = {DEMO_PROFILE_ID: demo_profile()}
    problems: list[str] = []
    files = list(files)
    files_state = _files_state(files)
    for path in files:
        try:
            entries = _read_file(path)
        except FileNotFoundError:
            problems.append(f"{path}: file not found")
            continue
        except (OSError, ValueError, tomllib.TOMLDecodeError) as exc:
            problems.append(f"{path}: {exc}")
            continue
        for index, entry in enumerate(entries):
            try:
                profile = _anchored(AgentProfile.model_validate(entry), path.parent)
            except ValidationError as exc:
                ident = entry.get("id") if isinstance(entry, dict) else None
                problems.append(f"{path}: profile {ident or f'#{index + 1}'}: {_first_error(exc)}")
                continue
            # Re-insert so dict order follows precedence: the default then comes from the most specific file.
            profiles.pop(profile.id, None)
            profiles[profile.id] = profile
    for problem in problems:
        _warn_once(problem, files_state, set() if warned is None else warned)
    return profiles, problems


# Profiles are re-read on every use (twice per connect): a problem is logged once per state of the files
# (their paths, sizes and mtimes), so an edit that leaves it broken warns again, and nothing else does.
Warned = tuple[str, tuple[tuple[str, int, int], ...]]


def _files_state(files: list[Path]) -> tuple[tuple[str, int, int], ...]:
    state = []
    for path in files:
        try:
            info = path.stat()
        except OSError:
            state.append((str(path), -1, -1))
        else:
            state.append((str(path), info.st_size, info.st_mtime_ns))
    return tuple(state)


def _warn_once(problem: str, files_state: tuple[tuple[str, int, int], ...], warned: set[Warned]) -> None:
    key = (problem, files_state)
    if key not in warned:
        warned.add(key)
        log.warning("ignored agent profile: %s", problem)


class AgentProfilesService:
    """``agents.profiles``: the summaries of the profiles the user authored (plus ``demo``)."""

    def __init__(self, config_dirs: Iterable[str | os.PathLike[str]] | None = None) -> None:
        self._config_dirs = list(config_dirs) if config_dirs is not None else None
        self.problems: list[str] = []
        self._warned: set[Warned] = set()  # the problems logged already (see load_profiles)

    def _load(self) -> dict[str, AgentProfile]:
        profiles, self.problems = load_profiles(profile_files(self._config_dirs), warned=self._warned)
        return profiles

    def list(self) -> tuple[AgentProfileSummary, ...]:
        """Profiles in file order (``demo`` first); ``is_default`` on at most one."""
        profiles = self._load()
        default_id = next((p.id for p in reversed(list(profiles.values())) if p.default), None)
        return tuple(p.summary(is_default=p.id == default_id) for p in profiles.values())

    def get(self, profile_id: str) -> AgentProfile | None:
        """The full profile, for the sessions service only (host-internal)."""
        return self._load().get(profile_id)
