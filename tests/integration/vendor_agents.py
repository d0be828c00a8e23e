"""The seven vendor agents the tests run, pinned in ``tests/node`` and run on Node 24 from PyPI, offline.

- :data:`VENDORS`: each agent's npm package, command and the dummy settings that let it open a session
  with no network and no real key (a key that is not one; a base URL at a closed local port, so a model
  call fails at once instead of retrying a remote host).
- :func:`profile`: a silo_nb profile for one agent with its own HOME — empty at the first use; HOMEs are
  kept for the whole test run (``vendor_homes`` in ``conftest.py``), so copilot unpacks its 245 MB once.
  A missing agent fails the test with the command to run (never a skip).
- :func:`agent_environment`: the kernel's environment while the agents run: only ``PATH``, with Node 24
  and the agents' bins first (their ``#!/usr/bin/env node`` scripts and pi-acp's ``pi`` come from there).
- Leftovers: :func:`processes_with_home` (also descendants that left the agent's process group) and
  :func:`processes_in_group` (the agent leads its own group), zombies not counted.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import NODE_MODULES, node24_bin

BIN = NODE_MODULES / ".bin"
CLOSED_PORT = "http://127.0.0.1:9"  # the discard port: nothing listens, a connection fails at once


@dataclass(frozen=True)
class Vendor:
    """One vendor agent as the tests start it."""

    id: str
    label: str
    package: str  # what .ci/setup installs (tests/node/package.json)
    command: str  # its bin in tests/node/node_modules/.bin
    args: tuple[str, ...] = ()
    keys: Mapping[str, str] = field(default_factory=dict)  # dummies for the offline session
    session: bool = True  # opens a session offline with the dummies
    option: tuple[str, str] | None = None  # a config option it offers, and a value to set it to
    cancel_timeout: float = 3.0  # the profile's: how long a Stop waits for the agent's answer


VENDORS = {
    v.id: v
    for v in (
        Vendor(
            "claude",
            "Claude",
            "@agentclientprotocol/claude-agent-acp@0.101.0",
            "claude-agent-acp",
            keys={"ANTHROPIC_API_KEY": "sk-ant-dummy", "ANTHROPIC_BASE_URL": CLOSED_PORT},
            option=("mode", "plan"),
        ),
        Vendor(
            "codex",
            "Codex",
            "@agentclientprotocol/codex-acp@2.6.0",
            "codex-acp",
            keys={"OPENAI_API_KEY": "sk-dummy"},
            option=("mode", "read-only"),
        ),
        Vendor(
            "gemini",
            "Gemini CLI",
            "@google/gemini-cli@0.61.0",
            "gemini",
            ("--acp",),
            keys={"GEMINI_API_KEY": "dummy"},
            option=("mode", "plan"),
            cancel_timeout=1.0,  # it does not answer a Stop while it retries: no need to wait longer
        ),
        Vendor("opencode", "opencode", "opencode-ai@1.18.33", "opencode", ("acp",), option=("mode", "plan")),
        Vendor(
            "pi",
            "pi",
            "pi-acp@0.0.34 + @earendil-works/pi-coding-agent@1.6.0",
            "pi-acp",
            keys={"ANTHROPIC_API_KEY": "sk-ant-dummy"},
            option=("thought_level", "high"),
        ),
        Vendor(
            "qwen",
            "Qwen Code",
            "@qwen-code/qwen-code@0.24.4",
            "qwen",
            ("--acp", "--auth-type", "openai", "--model", "qwen3-coder-plus"),
            keys={"OPENAI_API_KEY": "sk-dummy", "OPENAI_BASE_URL": CLOSED_PORT + "/v1"},
            option=("mode", "plan"),
        ),
        Vendor(
            "copilot", "Copilot", "@github/copilot@1.0.102", "copilot", ("--acp", "--stdio"), session=False
        ),
    )
}


def command_of(vendor: Vendor) -> Path:
    path = BIN / vendor.command
    if not path.exists():
        pytest.fail(f"{vendor.package} is missing ({path}) — run `bash .ci/setup` (it installs tests/node)")
    return path


def profile(vendor: Vendor, home: Path, *, keys: bool = True, **extra: Any) -> dict[str, Any]:
    """The profile of ``vendor`` with HOME ``home`` and (``keys``) its dummy settings; ``id`` defaults to
    the vendor's, ``-nokey`` appended without keys."""
    env = {"HOME": str(home), **(vendor.keys if keys else {})}
    return {
        "id": extra.pop("id", vendor.id if keys else f"{vendor.id}-nokey"),
        "label": vendor.label,
        "command": str(command_of(vendor)),
        "args": list(vendor.args),
        "env": env,
        **extra,
    }


def agent_path() -> str:
    return os.pathsep.join([str(node24_bin()), str(BIN), os.environ.get("PATH", "/usr/bin:/bin")])


@contextlib.contextmanager
def agent_environment() -> Iterator[None]:
    """The process environment scrubbed to ``PATH`` (Node 24 and the agents first): no keys, no stored
    logins, no ``IS_SANDBOX`` reach the agents; each profile sets its own HOME."""
    path = agent_path()
    with pytest.MonkeyPatch.context() as patch:
        for key in list(os.environ):
            patch.delenv(key)
        patch.setenv("PATH", path)
        yield


def _table() -> Iterator[tuple[int, bytes, int, bytes]]:
    """``(pid, state, process group, environ)`` of every live process."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            with open(f"/proc/{entry.name}/environ", "rb") as f:
                environ = f.read() + b"\0"
        except OSError:
            continue
        yield int(entry.name), fields[0], int(fields[2]), environ


def _until_gone(find: Any, wait: float) -> list[int]:
    deadline = time.monotonic() + wait
    while True:
        found: list[int] = find()
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def processes_with_home(home: Path, wait: float = 8.0) -> list[int]:
    """Live processes whose environment has ``HOME=home``, after up to ``wait`` s for them to go."""
    needle = f"\0HOME={home}\0".encode()
    return _until_gone(lambda: [p for p, s, _, e in _table() if s != b"Z" and needle in b"\0" + e], wait)


def processes_in_group(group: int, wait: float = 8.0) -> list[int]:
    """Live processes of process group ``group`` (an agent's pid: it leads its group)."""
    return _until_gone(lambda: [p for p, s, g, _ in _table() if s != b"Z" and g == group], wait)
