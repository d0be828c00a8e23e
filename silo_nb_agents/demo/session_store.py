"""Sessions of the demo agent and their persistence in ``--state-dir``.

- A ``Session`` holds its settings (``config``), the history of every ``update`` its turns sent plus a
  ``user_message_chunk`` per prompt, its id counter and usage. Its turns in flight and its one-turn-at-a-time
  lock live only in memory.
- ``Store`` keeps one JSON file per session (``<state dir>/<sessionId>.json``), rewritten atomically (temp
  file + ``os.replace``) so another process — or another in-process agent — can replay it
  (``session/load``), continue it (``session/resume``) or list it (``session/list``). The files are the only
  state two agents share.
- A ``Clock`` per agent gives strictly increasing ``updatedAt`` stamps, so listing order is stable.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

from silo_nb_agents.demo.rpc_endpoint import JsonObject, log
from silo_nb_agents.user_dirs import ensure_private_dir

# (value, name, description)
MODES: Final = (
    ("ask", "Ask", "Answer questions without touching files"),
    ("code", "Code", "Write and edit code"),
    ("plan", "Plan", "Draft a plan before acting"),
)
MODELS: Final = (
    ("demo-fast", "Demo Fast", "Quick scripted replies"),
    ("demo-smart", "Demo Smart", "The same scripted replies, considered at length"),
)
DEFAULT_CONFIG: Final[JsonObject] = {"mode": "ask", "model": "demo-fast", "verbose": False}

SAFE_SESSION_ID: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


class Clock:
    """ISO 8601 UTC timestamps that strictly increase for one agent (so listing order is stable)."""

    def __init__(self) -> None:
        self._last: datetime | None = None

    def now_iso(self) -> str:
        now = datetime.now(UTC)
        if self._last is not None and now <= self._last:
            now = self._last + timedelta(microseconds=1)
        self._last = now
        return now.isoformat(timespec="microseconds").replace("+00:00", "Z")


class Session:
    """A conversation: its settings, its history of updates and its counters."""

    def __init__(self, session_id: str, cwd: str, updated_at: str) -> None:
        self.session_id = session_id
        self.cwd = cwd
        self.title: str | None = None
        self.updated_at = updated_at
        self.config: JsonObject = dict(DEFAULT_CONFIG)
        self.history: list[JsonObject] = []
        self.seq = 0
        self.forked_at = 0  # a fork's history starts with this many of its parent's updates (copied)
        self.rewound: list[JsonObject] = []  # the user messages ``_session/rewind`` dropped (still received)
        self.used = 0
        self.cost = 0.0
        self.turns: list[Turn] = []
        self.lock = asyncio.Lock()
        # The MCP servers the client offered (session/new, load, resume): not stored, offered again.
        self.mcp_servers: list[JsonObject] = []
        # The subagents of its turns (``subagent.py``): a child's session id -> its Stop (session/cancel).
        self.children: dict[str, asyncio.Event] = {}
        # The client's systemPrompt ({"mode", "text"}), offered again at each load: not stored either.
        self.system_prompt: JsonObject | None = None

    def next_id(self, prefix: str) -> str:
        self.seq += 1
        return f"{prefix}-{self.seq}"

    def to_json(self) -> JsonObject:
        return {
            "sessionId": self.session_id,
            "cwd": self.cwd,
            "title": self.title,
            "updatedAt": self.updated_at,
            "config": dict(self.config),
            "history": list(self.history),
            "seq": self.seq,
            "usage": {"used": self.used, "cost": self.cost},
            **({"forkedAt": self.forked_at} if self.forked_at else {}),
            **({"rewound": list(self.rewound)} if self.rewound else {}),
        }

    @classmethod
    def from_json(cls, data: JsonObject, now: str) -> Session:
        """The session stored as ``data``; ``now`` stands in for a missing ``updatedAt``."""
        updated_at = data.get("updatedAt")
        stamp = updated_at if isinstance(updated_at, str) else now
        session = cls(str(data["sessionId"]), str(data.get("cwd") or ""), stamp)
        title = data.get("title")
        session.title = title if isinstance(title, str) else None
        config = data.get("config")
        if isinstance(config, dict):
            session.config.update({k: v for k, v in config.items() if k in DEFAULT_CONFIG})
        history = data.get("history")
        if isinstance(history, list):
            session.history = [u for u in history if isinstance(u, dict)]
        seq = data.get("seq")
        session.seq = seq if isinstance(seq, int) else len(session.history)
        rewound = data.get("rewound")
        session.rewound = [u for u in rewound if isinstance(u, dict)] if isinstance(rewound, list) else []
        forked_at = data.get("forkedAt")
        session.forked_at = forked_at if isinstance(forked_at, int) and forked_at > 0 else 0
        usage = data.get("usage")
        if isinstance(usage, dict):
            used, cost = usage.get("used"), usage.get("cost")
            session.used = used if isinstance(used, int) else 0
            session.cost = float(cost) if isinstance(cost, (int, float)) else 0.0
        return session


class Store:
    """Sessions on disk: ``<state dir>/<sessionId>.json``, written atomically, private: the folder is made
    0700 and each file 0600 whatever the umask; a folder that is another user's, or that others may write
    (the default one lives in the shared temp folder), is not used at all (said once on stderr)."""

    def __init__(self, directory: Path, clock: Clock) -> None:
        self.directory = directory
        self.clock = clock
        self._refused = False

    def _path(self, session_id: str) -> Path | None:
        if not SAFE_SESSION_ID.match(session_id):
            return None
        return self.directory / f"{session_id}.json"

    def _usable(self, *, create: bool = True) -> bool:
        """The folder exists (made 0700 if missing), is ours, and nobody else may write or read it."""
        if create:
            ensure_private_dir(self.directory)  # the data folder above it too, if this makes it
        try:
            info = os.lstat(self.directory)
        except FileNotFoundError:
            return False
        if not stat.S_ISDIR(info.st_mode):
            raise NotADirectoryError(f"{self.directory} is not a folder")
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o077:
            return True
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o022:
            os.chmod(self.directory, 0o700)  # ours and only readable by others: made private
            return True
        if not self._refused:
            self._refused = True
            log(f"not saving sessions in {self.directory}: not a private folder of this user")
        return False

    def save(self, session: Session) -> None:
        path = self._path(session.session_id)
        if path is None:
            return
        try:
            if not self._usable():
                return
            # pid and object id: two agents in one process never share a temp file
            temp = path.with_name(f".{path.name}.{os.getpid()}.{id(self):x}.tmp")
            payload = json.dumps(session.to_json(), ensure_ascii=False, separators=(",", ":"))
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
            with os.fdopen(os.open(temp, flags, 0o600), "w", encoding="utf-8") as file:
                os.fchmod(file.fileno(), 0o600)
                file.write(payload)
            os.replace(temp, path)
        except OSError as exc:
            log(f"could not save {session.session_id}: {exc}")

    def delete(self, session_id: str) -> bool:
        """Remove a saved session; False when there was none."""
        path = self._path(session_id)
        try:
            if path is not None:
                path.unlink()
                return True
        except FileNotFoundError:
            pass
        except OSError as exc:
            log(f"could not delete {session_id}: {exc}")
        return False

    def load(self, session_id: str) -> Session | None:
        path = self._path(session_id)
        try:
            if path is None or not self._usable(create=False):
                return None
        except OSError:
            return None
        return self._read(path)

    def _read(self, path: Path) -> Session | None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as file:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    return None  # a FIFO or a device: never read (it could block)
                data = json.loads(file.read().decode("utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or not isinstance(data.get("sessionId"), str):
            return None
        return Session.from_json(data, self.clock.now_iso())

    def list(self, cwd: str | None) -> list[Session]:
        try:
            if not self._usable(create=False):
                return []
            paths = sorted(self.directory.glob("*.json"))
        except OSError:
            return []
        sessions = [s for s in (self._read(p) for p in paths) if s is not None]
        if cwd is not None:
            sessions = [s for s in sessions if s.cwd == cwd]
        sessions.sort(key=lambda s: s.updated_at, reverse=True)
        return sessions


class Turn:
    """One ``session/prompt`` in flight (or queued behind another one), listed in its session's turns."""

    def __init__(self, siblings: list[Turn]) -> None:
        self.cancelled = asyncio.Event()
        self.finished = asyncio.Event()
        self.steered: list[str] = []  # input the client added while it runs (``_session/steering``)
        self._siblings = siblings
        siblings.append(self)

    def done(self) -> None:
        self.finished.set()
        if self in self._siblings:
            self._siblings.remove(self)
