"""Secrets stay out of what is shown (issue 28): ``repr`` of a profile and of its MCP servers, and what
``%silo doctor`` prints of an agent's and a stdio MCP server's command line, show ``***`` for env values,
header values, URL credentials and secret-looking arguments, keeping keys and the rest readable. What is
saved or sent (``model_dump``, ``str``, the agent's argv, ACP's ``mcpServers``) keeps the real values."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from silo_nb.sessions.profiles import AgentProfile
from silo_nb.sessions.redact import MASK, redact_args, redact_url
from tests.conftest import AGENTS, Workspace

SECRETS = (
    "sk-ant-api03-Zq7xW9",
    "hunter2pw",
    "s3cr3t-header",
    "ghp_Ab12Cd34Ef56Gh78Ij90Kl12",
    "qTok9",
    "envval-77",
    "A1b2C3d4E5f6G7h8I9j0K1l2",
)


def secret_profile() -> dict[str, Any]:
    return {
        "id": "secretive",
        "command": sys.executable,
        "args": [str(AGENTS / "raw_agent.py"), "ok", "--api-key", SECRETS[0], f"--token={SECRETS[3]}"],
        "env": {"ANTHROPIC_API_KEY": SECRETS[5]},
        "mcp_servers": [
            {
                "name": "local",
                "command": "python",
                "args": ["-m", "tool", f"DB_PASSWORD={SECRETS[1]}", SECRETS[6], "--verbose"],
                "env": {"GITHUB_TOKEN": SECRETS[3]},
            },
            {
                "name": "remote",
                "type": "http",
                "url": f"https://ada:{SECRETS[1]}@example.org/mcp?token={SECRETS[4]}&region=eu",
                "headers": {"Authorization": f"Bearer {SECRETS[2]}"},
            },
        ],
    }


def shows_none(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} shown in {text[:400]!r}"


def test_a_profiles_repr_shows_keys_not_secret_values_and_what_is_saved_keeps_them() -> None:
    profile = AgentProfile.model_validate(secret_profile())
    shown = repr(profile)
    shows_none(shown)
    shows_none(repr(profile.mcp_servers[1]) + repr(list(profile.__rich_repr__())))
    assert "ANTHROPIC_API_KEY" in shown and "Authorization" in shown and "GITHUB_TOKEN" in shown
    assert "--api-key" in shown and "--verbose" in shown and "example.org/mcp" in shown and MASK in shown
    # What is saved and sent is untouched.
    dumped = profile.model_dump()
    assert dumped["env"] == {"ANTHROPIC_API_KEY": SECRETS[5]} and SECRETS[0] in dumped["args"]
    assert profile.mcp_servers[1].wire()["headers"] == [
        {"name": "Authorization", "value": f"Bearer {SECRETS[2]}"}
    ]
    assert profile.spawn_env["ANTHROPIC_API_KEY"] == SECRETS[5]
    # str() (print(profile) in a cell) masks them too: a saved notebook is often shared.
    shows_none(str(profile) + str(profile.mcp_servers[1]))
    assert "env={'ANTHROPIC_API_KEY': '***'}" in str(profile)


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["--token", "abc"], ["--token", MASK]),
        (["--api-key=abc", "--port=8080"], [f"--api-key={MASK}", "--port=8080"]),
        (
            ["-m", "tool", "--verbose", "FOO=bar", "mode=fast"],
            ["-m", "tool", "--verbose", f"FOO={MASK}", "mode=fast"],
        ),
        (["--header", "Authorization: Bearer x"], ["--header", f"Authorization: {MASK}"]),
        (["--url", "https://u:p@h.org/x?api_key=k"], ["--url", f"https://{MASK}@h.org/x?api_key={MASK}"]),
        (["@zed-industries/claude-code-acp", "claude-3-5-sonnet-20241022"], None),  # readable: kept
        (["/home/ada/Project2024/notes.md", "-y"], None),
        ([SECRETS[6], "0123456789abcdef0123456789abcdef01234567"], [MASK, MASK]),  # random-looking
    ],
)
def test_args_that_look_like_secrets_are_redacted_and_the_rest_kept(
    args: list[str], shown: list[str] | None
) -> None:
    assert redact_args(args) == tuple(shown if shown is not None else args)


def test_urls_lose_their_credentials_only() -> None:
    assert redact_url("https://example.org/mcp?region=eu") == "https://example.org/mcp?region=eu"
    assert (
        redact_url("https://tok@example.org/a?x=1&secret=s#f")
        == f"https://{MASK}@example.org/a?x=1&secret={MASK}#f"
    )


async def test_doctor_prints_the_agents_and_its_mcp_servers_commands_without_their_secrets(
    workspace: Workspace,
) -> None:
    workspace.add_profiles(secret_profile())
    svc = workspace.service()
    check = await svc.sessions.doctor("secretive")
    report = "\n".join(check.lines())
    assert check.problem is None, report
    shows_none(report + repr(check))
    assert f"--api-key {MASK}" in report and f"--token={MASK}" in report
    assert f'MCP server "local" (stdio, python -m tool DB_PASSWORD={MASK} {MASK} --verbose): sent' in report
