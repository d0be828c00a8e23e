"""``%silo agents --installed`` (issue 33): the pinned agents' cache, one line each, a tampered entry shown
as refused with the folder to remove, and an empty cache saying how to pin one."""

from __future__ import annotations

from pathlib import Path

from IPython.core.interactiveshell import InteractiveShell

from silo_nb.sessions.agent_pins import ensure_installed
from tests.support.pinned import data
from tests.support.shell import run, shell

__all__ = ["data", "shell"]  # the fixtures


async def test_an_empty_cache_says_how_to_pin_an_agent(shell: InteractiveShell, data: Path) -> None:
    captured, result = await run(shell, "%silo agents --installed")
    assert result.success
    assert captured.stdout.startswith(f"No pinned agents installed in {data / 'agents'}")
    assert 'agent = "npm:PACKAGE@X.Y.Z"' in captured.stdout


async def test_the_cache_lists_each_entry_and_a_tampered_one_as_refused(
    shell: InteractiveShell, data: Path
) -> None:
    good = ensure_installed("npm:good-agent@1.2.3")
    bad = ensure_installed("npm:bad-agent@0.0.1")
    Path(bad.args[0]).write_text("tampered")
    captured, result = await run(shell, "%silo agents --installed")
    assert result.success
    lines = captured.stdout.splitlines()
    assert lines[0] == f"Pinned agents in {data / 'agents'}:"
    assert f"  npm:good-agent@1.2.3  (npm good-agent 1.2.3)  {good.path}  ok" in lines
    refused = [line for line in lines if line.startswith(f"  {bad.path}: ")]
    assert len(refused) == 1 and "changed since its install" in refused[0] and "refused" in refused[0]
