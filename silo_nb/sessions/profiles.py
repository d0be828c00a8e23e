"""Agent profiles: user-authored files only. A notebook can *name* a profile, never define one.

Search order, later wins per id (``profile_sources.py``): the built-in ``demo``; the site's
``silo/profiles.toml`` / ``.json`` (every Jupyter config folder but the user's: ``/etc/jupyter``,
``<sys-prefix>/etc/jupyter``, ...); the user's (``~/.jupyter``), always above the site's; then the file
``$SILO_NB_PROFILES`` (``.toml`` or ``.json`` by suffix). Each loaded profile remembers its file and the
site entries it replaces (``AgentProfilesService.origin``, ``merge_report``: ``%silo doctor``).
A broken file or entry is skipped with a warning and remembered, so "no profile named X" can say why; a
broken entry that would have replaced a lower one says that the lower one is used meanwhile.

- ``auth_method`` pins the agent's sign-in method (an id from its ``authMethods``); ``cancel_timeout`` bounds
  how long a Stop waits for the agent to end the turn (see ``sessions/auth_methods.py``,
  ``session/handle.py``); ``request_timeout`` bounds every other request outside a connect (config
  options, ``session/list``, ``session/delete``, ``logout``).
- ``command``: a bare name (``npx``) is looked up on PATH when the agent starts; a path with a slash that
  is relative (``./bin/agent``, ``tools/agent``) is made absolute here, at load time, against the folder
  of the profile file it is written in (as named, symlinks not resolved), so it never depends on a
  session's ``cwd`` or the kernel's; ``~`` is expanded.
- ``repr`` (and rich's) shows env values and secret-looking args as ``***`` (``redact.py``; the MCP
  servers' headers and URL credentials too); ``model_dump`` and ``spawn_env`` keep them, and so does
  ``str()`` for the profile's own fields (pydantic's, left as it was; a nested server shows as its repr).
"""

from __future__ import annotations

import difflib
import json
import logging
import os
import re
import sys
import tomllib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from silo_nb.model import (
    AgentProfileSummary,
)
from silo_nb.sessions.agent_pins import is_agent_spec, parse_agent_spec
from silo_nb.sessions.mcp_servers import McpServerConfig
from silo_nb.sessions.profile_sources import (
    BUILT_IN,
    ProfileOrigin,
    ProfileSource,
    merge_lines,
    profile_sources,
)
from silo_nb.sessions.redact import masked_values, redact_args
from silo_nb.sessions.safe_files import open_file

__all__ = [
    "DEMO_PROFILE_ID",
    "MAX_PROFILES_FILE_BYTES",
    "AgentProfile",
    "AgentProfilesService",
    "load_profiles",
    "merge_profiles",
    "profile_error",
    "profile_files",
    "replay_args",
    "replay_profile",
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
    # An ``authMethods`` id to authenticate with before every session (else: an env_var or api-key
    # method whose variables are set in ``env`` or the kernel's environment, if any).
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
    # The kernel tools (silo_nb/kernel_tools): a "notebook" MCP server offered to sessions connected from
    # a kernel, how long one run_code may run, and how many cell changes (insert, edit…) one turn may make.
    kernel_tools: bool = True
    run_code_timeout: float = Field(default=60.0, gt=0)
    cell_changes_per_turn: int = Field(default=200, gt=0)
    # The memory the kernel variables' undo checkpoints may take (issue 32; kernel_tools/turn_parts.py): a
    # value whose copy would pass it is not copied, and listed "not restorable".
    checkpoint_max_bytes: int = Field(default=512 * 1024 * 1024, gt=0)
    # Undo (issue 32): a checkpoint of the session's folders at each turn's start and end, kept beside the
    # session's journal, so that an undo can put back the files a turn changed (session/file_checkpoints.py).
    checkpoint_files: bool = True
    # The conversation's part of an undo: "rewind" (the agent's ``_session/rewind`` extension, where offered),
    # "fork" (also fork the session before each turn, where the agent offers session/fork, so an undo can
    # point at the conversation from before the turn: one agent session per turn), "off" (never touched).
    checkpoint_conversation: Literal["rewind", "fork", "off"] = "rewind"
    # Instructions sent as ACP's ``systemPrompt`` (v1.25, unstable) on session/new, load, resume and fork,
    # to agents that take it (``sessions/system_prompt.py``): added to the agent's own (``append``) or
    # replacing them (``override``, where the agent offers it). ``notebook_guidance``: sessions connected
    # from a kernel also get silo_nb's short guidance on the notebook tools (false: not sent).
    system_prompt: str | None = None
    system_prompt_mode: Literal["append", "override"] = "append"
    notebook_guidance: bool = True
    # A journal played back by the replay agent (``silo_nb.replay_agent``): the command and args are
    # then the replay agent's, at ``replay_speed`` times the recorded pace (0: no pauses).
    replay: str | None = None
    replay_speed: float = Field(default=1.0, ge=0)
    # The agent as a pinned distribution (``npm:PKG@VER``, ``pypi:NAME==VER``, ``acp:ID@VER``;
    # ``agent_pins.py``): installed once into the data dir's cache and started from there, ``args`` added.
    agent: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _replay_command(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("agent"), str):
            parse_agent_spec(data["agent"])  # a bad spec skips the profile with its one line
            if "command" not in data:  # the command is the installed entry's, found when the agent starts
                data = {**data, "command": data["agent"]}
        if isinstance(data, dict) and isinstance(data.get("replay"), str) and "command" not in data:
            speed = data.get("replay_speed", 1.0)
            return {**data, "command": sys.executable, "args": replay_args(data["replay"], speed)}
        return data

    def shown_fields(self) -> Iterator[tuple[str, Any]]:
        """The fields as they may be shown: env values and secret-looking args as ``***``."""
        for name, value in self:
            yield (
                name,
                masked_values(value) if name == "env" else redact_args(value) if name == "args" else value,
            )

    def __repr_args__(self) -> Any:
        # pydantic's repr, str and rich repr all read this: each shows the secrets masked.
        return list(self.shown_fields())

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
            kernel_tools=self.kernel_tools,
            run_code_timeout=self.run_code_timeout,
            cell_changes_per_turn=self.cell_changes_per_turn,
            checkpoint_max_bytes=self.checkpoint_max_bytes,
        )


def replay_args(journal: str, speed: Any = 1.0) -> tuple[str, ...]:
    """The replay agent's arguments for ``journal`` at ``speed``."""
    return ("-m", "silo_nb.replay_agent", journal, "--speed", str(speed))


def replay_profile(journal: Path, speed: float = 1.0) -> AgentProfile:
    """A profile playing ``journal`` back (``%silo connect --replay``): id ``replay-`` + the file's stem."""
    stem = re.sub(r"[^a-z0-9-]+", "-", journal.stem.lower()).strip("-") or "journal"
    entry = {"id": f"replay-{stem}", "label": f"Replay of {journal.name}", "replay": str(journal)}
    return AgentProfile.model_validate({**entry, "replay_speed": speed})


def demo_profile() -> AgentProfile:
    return AgentProfile(
        id=DEMO_PROFILE_ID,
        label="Demo agent",
        agent_id="silo-demo",
        command=sys.executable,
        args=("-m", "silo_nb_agents.demo"),
        connect_timeout=60.0,
    )


def profile_files(config_dirs: Iterable[str | os.PathLike[str]] | None = None) -> list[Path]:
    """Candidate files in precedence order (lowest first). ``config_dirs`` is most specific first."""
    return [source.path for source in profile_sources(config_dirs) if source.path is not None]


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
    if profile.replay is not None and not os.path.isabs(os.path.expanduser(profile.replay)):
        journal = os.path.normpath(os.path.join(os.path.abspath(folder), os.path.expanduser(profile.replay)))
        update: dict[str, Any] = {"replay": journal}
        if profile.args[:2] == ("-m", "silo_nb.replay_agent"):
            update["args"] = replay_args(journal, profile.replay_speed)
        profile = profile.model_copy(update=update)
    if not has_slash or profile.command == profile.agent:
        return profile  # a bare name: PATH, when the agent starts; a spec: its install, then
    if not os.path.isabs(command):
        command = os.path.normpath(os.path.join(os.path.abspath(folder), command))
    return profile if command == profile.command else profile.model_copy(update={"command": command})


def profile_error(exc: ValidationError) -> str:
    """The first problem in the profile's own words: an unknown key says so, with the closest known one."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error.get("loc", ()))
    if error.get("type") == "extra_forbidden" and len(error.get("loc", ())) == 1:
        close = difflib.get_close_matches(where, list(AgentProfile.model_fields), n=1, cutoff=0.6)
        keys = " — see the profile keys (docs/profiles-and-agents.md)"
        hint = f' — did you mean "{close[0]}"?' if close else keys
        return f'unknown key "{where}"{hint}'
    return f"{where}: {error.get('msg', 'invalid')}" if where else str(error.get("msg", "invalid"))


class ProfileProblems(list[str]):
    """One line per problem found in the profile files, and (``by_id``) the line of each profile id
    skipped, so "no profile named X" cites X's own problem, not another's."""

    def __init__(self) -> None:
        super().__init__()
        self.by_id: dict[str, str] = {}

    def about(self, profile_id: str) -> str | None:
        """The problem that skipped ``profile_id`` (or a skipped id close to it: "Bad Id" for "bad-id"); else
        a file that could not be read at all, if any."""
        if profile_id in self.by_id:
            return self.by_id[profile_id]
        folded = {ident.lower().replace(" ", "-").replace("_", "-"): ident for ident in self.by_id}
        close = difflib.get_close_matches(profile_id.lower(), list(folded), n=1, cutoff=0.75)
        if close:
            return self.by_id[folded[close[0]]]
        return next((p for p in self if ": profile " not in p), None)


def load_profiles(
    files: Iterable[Path | ProfileSource], *, warned: set[Warned] | None = None
) -> tuple[dict[str, AgentProfile], ProfileProblems]:
    """Profiles by id (built-in demo first, later files win), and one line per problem found; each
    problem is logged once per state of the files it notes in ``warned`` (every time without one)."""
    profiles, problems, _ = merge_profiles(files, warned=warned)
    return profiles, problems


def merge_profiles(
    files: Iterable[Path | ProfileSource], *, warned: set[Warned] | None = None
) -> tuple[dict[str, AgentProfile], ProfileProblems, dict[str, ProfileOrigin]]:
    """:func:`load_profiles`, and where each profile was read (``profile_sources.py``'s merge rule)."""
    profiles: dict[str, AgentProfile] = {DEMO_PROFILE_ID: demo_profile()}
    origins = {DEMO_PROFILE_ID: ProfileOrigin(BUILT_IN)}
    problems = ProfileProblems()
    skipped = problems.by_id
    sources = [f if isinstance(f, ProfileSource) else ProfileSource(f, "file") for f in files]
    files_state = _files_state([s.path for s in sources if s.path is not None])
    for source in sources:
        if source.path is None:
            continue
        path = source.path
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
                problem = f"{path}: profile {ident or f'#{index + 1}'}: {profile_error(exc)}"
                lower = origins.get(ident) if isinstance(ident, str) else None
                if lower is not None:  # the entry it meant to replace stays: say so, or it looks applied
                    problem += f" — {lower.source.entry_name()} is used meanwhile"
                problems.append(problem)
                if isinstance(ident, str):
                    skipped[ident] = problems[-1]
                continue
            # Re-insert so dict order follows precedence: the default then comes from the most specific file.
            profiles.pop(profile.id, None)
            profiles[profile.id] = profile
            lower = origins.pop(profile.id, None)
            overrides = () if lower is None else (*lower.overrides, lower.source)
            origins[profile.id] = ProfileOrigin(source, overrides)
    for problem in problems:
        _warn_once(problem, files_state, set() if warned is None else warned)
    return profiles, problems, origins


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
        self.problems = ProfileProblems()
        self._warned: set[Warned] = set()  # the problems logged already (see load_profiles)
        self._replays: dict[str, AgentProfile] = {}  # %silo connect --replay's, for this service's life
        self._sources: list[ProfileSource] = []  # the files of the last load, lowest first
        self._origins: dict[str, ProfileOrigin] = {}  # where each profile of the last load came from

    def add_replay(self, journal: Path, speed: float = 1.0) -> str:
        """Make a profile that plays ``journal`` back (the replay agent: silo_nb's own, no command of the
        notebook's) and return its id; the same journal gets the same id, so a restart reconnects it."""
        profile = replay_profile(journal, speed)
        self._replays[profile.id] = profile
        return profile.id

    def _load(self) -> dict[str, AgentProfile]:
        self._sources = profile_sources(self._config_dirs)
        profiles, self.problems, self._origins = merge_profiles(self._sources, warned=self._warned)
        return {**profiles, **{k: v for k, v in self._replays.items() if k not in profiles}}

    def origin(self, profile_id: str) -> ProfileOrigin | None:
        """Which file ``profile_id`` is read from and the lower entries it replaces (None: no such id)."""
        profiles = self._load()
        if profile_id in self._origins:
            return self._origins[profile_id]
        replay = profiles.get(profile_id)
        return None if replay is None else ProfileOrigin(ProfileSource(Path(replay.replay or ""), "replay"))

    def merge_report(self) -> list[str]:
        """The merge as ``%silo doctor`` shows it: the files read, then each profile's file."""
        self._load()
        try:
            user_file: Path | None = self.user_file()
        except ValueError:  # a service given no config folder has no file of the user's
            user_file = None
        return merge_lines(self._sources, self._origins, self.problems, user_file)

    def list(self) -> tuple[AgentProfileSummary, ...]:
        """Profiles in file order (``demo`` first); ``is_default`` on at most one."""
        profiles = self._load()
        default_id = next((p.id for p in reversed(list(profiles.values())) if p.default), None)
        return tuple(p.summary(is_default=p.id == default_id) for p in profiles.values())

    def user_file(self) -> Path:
        """The user's own profiles file (``silo/profiles.toml`` in the most specific config folder), where
        ``%silo add-profile`` writes; it need not exist yet."""
        if self._config_dirs is None:
            from jupyter_core.paths import jupyter_config_dir

            return Path(jupyter_config_dir()) / "silo" / "profiles.toml"
        if not self._config_dirs:
            raise ValueError("no config folder to write profiles to (this service was given none)")
        return Path(self._config_dirs[0]) / "silo" / "profiles.toml"

    def get(self, profile_id: str) -> AgentProfile | None:
        """The full profile, for the sessions service only (host-internal). A spec (``npm:…``) that is not
        a profile's id is a profile of its own: that agent, every other setting the default."""
        found = self._load().get(profile_id)
        if found is None and is_agent_spec(profile_id):
            return spec_profile(profile_id)
        return found


def spec_profile(spec: str) -> AgentProfile:
    """The profile a bare agent spec stands for (``run_grid(agents=[...])``); a bad spec raises."""
    parse_agent_spec(spec)
    slug = re.sub(r"[^a-z0-9]+", "-", spec.lower()).strip("-")[:60]
    return AgentProfile(id=slug, label=spec, command=spec, agent=spec)
