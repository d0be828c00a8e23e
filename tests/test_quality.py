"""Lint, format and types are part of the test command; plus the rules a notebook client must keep."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import silo_nb

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


def test_ruff_lint() -> None:
    result = _run(str(BIN / "ruff"), "check", "silo_nb", "tests", "benchmarks")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    result = _run(str(BIN / "ruff"), "format", "--check", "silo_nb", "tests", "benchmarks")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict() -> None:
    result = _run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr


FORBIDDEN = re.compile(
    r"\bnest_asyncio|asyncio\.run\(|run_until_complete|jupyter_ui_poll|time\.sleep\(|threading\.Thread"
)


@pytest.mark.parametrize(
    "path", sorted(p for p in (ROOT / "silo_nb").rglob("*.py") if p.name != "demo_agent.py")
)
def test_no_loop_blocking_or_nesting(path: Path) -> None:
    """The kernel's loop is never blocked, nested or replaced; no threads for I/O."""
    hits = [line for line in path.read_text().splitlines() if FORBIDDEN.search(line)]
    assert not hits, f"{path.relative_to(ROOT)}: {hits}"


def test_no_root_logger() -> None:
    for path in (ROOT / "silo_nb").rglob("*.py"):
        text = path.read_text()
        assert not re.search(r"\blogging\.(exception|error|warning|info|debug)\(", text), path


def test_import_creates_no_event_loop_and_reads_nothing() -> None:
    code = (
        "import asyncio, silo_nb, sys\n"
        "policy = asyncio.get_event_loop_policy()\n"
        "assert getattr(policy._local, '_loop', None) is None, 'an event loop was created at import'\n"
        "assert '_default_agents' in vars(silo_nb) and silo_nb._default_agents is None\n"
        "svc = silo_nb.AgentsService(workspace_dir='.', config_dirs=[])\n"
        "assert getattr(policy._local, '_loop', None) is None, 'AgentsService() created a loop'\n"
        "print('ok')\n"
    )
    result = _run(sys.executable, "-c", code)
    assert result.stdout.strip() == "ok", result.stderr


def test_public_names_complete_and_sorted() -> None:
    assert list(silo_nb.__all__) == sorted(silo_nb.__all__)
    for name in silo_nb.__all__:
        assert getattr(silo_nb, name) is not None
    required = {
        "AgentsService",
        "AgentSessionsService",
        "AgentSessionHandle",
        "AgentSessionError",
        "AgentPromptBlock",
        "AgentPromptResult",
        "AgentSessionUpdate",
        "AgentToolCall",
        "AgentToolCallContent",
        "AgentPlanEntry",
        "AgentSessionUsage",
        "AgentPermissionRequest",
        "AgentPermissionOption",
        "AgentSessionConfigOption",
        "AgentSessionConfigChoice",
        "AgentCommand",
        "AgentPromptCapabilities",
        "AgentSessionSummary",
        "AgentSessionRestore",
        "AgentInfo",
        "AgentProfileSummary",
        "Disposable",
        "agents",
    }
    assert required <= set(silo_nb.__all__)
    assert issubclass(silo_nb.AgentSessionError, RuntimeError)


def test_every_public_name_has_a_docstring() -> None:
    for name in silo_nb.__all__:
        value = getattr(silo_nb, name)
        if isinstance(value, type):
            assert value.__doc__ and value.__doc__.strip(), name
