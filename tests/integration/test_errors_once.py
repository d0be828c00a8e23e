"""Errors said once in a real kernel's cell: a connect that fails, a profile skipped for a broken key.

Before, a failed ``%silo connect`` replaced its "connecting…" line with the error and then raised the same
error as the cell's ``UsageError``; a skipped profile was logged on stderr and cited again by the
``UsageError``. Each test counts the times the error's words reach the cell's outputs, over every message
the kernel sent for it (streams, displays and their updates, errors).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.conftest import Workspace
from tests.integration.kernel_harness import KernelHarness, kernel_env, silo_kernel

PROFILES = """
[[profiles]]
id = "typo"
lable = "a misspelt key"
command = "nope"

[[profiles]]
id = "dies"
command = "sh"
args = ["-c", "echo the agent gave up >&2; exit 3"]
"""


@pytest.fixture
async def kernel(workspace: Workspace) -> AsyncIterator[KernelHarness]:
    profiles = workspace.root / "profiles.toml"
    profiles.write_text(PROFILES)
    async with silo_kernel(workspace, kernel_env(workspace, profiles=profiles)) as harness:
        yield harness


def said(harness: KernelHarness, msg_id: str) -> list[str]:
    """Every text the cell showed: stream text, each display's plain text, the error's value."""
    texts: list[str] = []
    for message in harness.outputs(msg_id, "stream", "display_data", "update_display_data", "error"):
        content: dict[str, Any] = message["content"]
        texts.append(
            str(content.get("text") or content.get("evalue") or content.get("data", {}).get("text/plain"))
        )
    return texts


async def test_a_failed_connect_is_said_once(kernel: KernelHarness) -> None:
    msg_id = kernel.execute("%silo connect dies")
    reply = await kernel.reply(msg_id)
    texts = said(kernel, msg_id)
    assert reply["content"]["status"] == "error"  # the cell fails: Run All stops here
    assert sum("agent exited with code 3" in text for text in texts) == 1, json.dumps(texts)
    assert any(t.startswith("UsageError: Could not start dies") for t in texts), texts
    updates = kernel.outputs(msg_id, "update_display_data")
    assert [u["content"]["data"]["text/plain"] for u in updates] == [""], texts  # "connecting…" went


async def test_a_skipped_profile_is_said_once_by_its_error(kernel: KernelHarness) -> None:
    msg_id = kernel.execute("%silo connect typo")
    await kernel.reply(msg_id)
    texts = said(kernel, msg_id)
    assert sum('unknown key "lable"' in text for text in texts) == 1, json.dumps(texts)
    assert any('No agent profile with id "typo"' in t and 'did you mean "label"' in t for t in texts), texts


async def test_a_problem_the_error_does_not_cite_is_still_logged(kernel: KernelHarness) -> None:
    # Connecting to another (missing) profile: typo's problem is not this error's, so it is logged.
    msg_id = kernel.execute("%silo connect elsewhere")
    await kernel.reply(msg_id)
    texts = said(kernel, msg_id)
    assert any("ignored agent profile" in t and '"lable"' in t for t in texts), texts
    assert any('No agent profile with id "elsewhere"' in t and "Skipped" not in t for t in texts), texts
