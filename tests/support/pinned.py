"""Fixtures of the pinned-agent tests (issue 33): a private data dir whose cache the installs go to, the
test index of the ACP registry, and a stand-in npm (``tests/agents/fake_npm.py``) counting its runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent
AGENTS = TESTS / "agents"
INDEX = TESTS / "sessions" / "pins" / "registry.json"


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private data dir (the cache under it) and the stand-in npm, counting its runs in ``npm.log``."""
    folder = tmp_path / "data"
    monkeypatch.setenv("SILO_NB_DATA_DIR", str(folder))
    monkeypatch.setenv("SILO_NB_ACP_REGISTRY", str(INDEX))
    npm = tmp_path / "npm"
    npm.write_text(f"#!{sys.executable}\nimport runpy; runpy.run_path({str(AGENTS / 'fake_npm.py')!r})\n")
    npm.chmod(0o755)
    monkeypatch.setenv("SILO_NB_AGENT_NPM", str(npm))
    monkeypatch.setenv("FAKE_NPM_LOG", str(tmp_path / "npm.log"))
    monkeypatch.delenv("FAKE_NPM_FAIL", raising=False)
    return folder


def installs(data: Path) -> list[str]:
    """What the stand-in npm installed, one ``PKG@VER`` per run."""
    log = data.parent / "npm.log"
    return log.read_text().splitlines() if log.exists() else []
