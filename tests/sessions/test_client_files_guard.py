"""``fs/write_text_file`` to a file that runs code asks first; hard links and a path that cannot be resolved
are refused in one line (``session/client_files.py``, ``sessions/code_targets.py``, issue 28)."""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

import silo_nb
from silo_nb import PermissionPolicy
from silo_nb.acp import AcpRpcError
from silo_nb.model.models import AgentSessionUpdate
from silo_nb.sessions.session.client_files import ClientFiles
from silo_nb.sessions.session.permission_desk import PermissionDesk
from tests.conftest import Workspace, raw_agent

# (path under the session folder, its mode when it exists before the write: None = a new file)
RUNS_CODE = [
    (".git/config", 0o644),
    (".git/hooks/pre-commit", 0o755),
    (".git/hooks/post-checkout", None),
    (".GIT/config", 0o644),  # the same folder on a case-insensitive disk
    (".git", 0o644),  # a worktree's .git file names the repository git reads
    (".hg/hgrc", 0o644),
    (".svn/wc.db", 0o644),
    (".jj/repo/config.toml", None),
    ("tools/deploy.sh", 0o750),  # executable: whatever runs it next runs the new text
    ("ipython_config.py", None),
    ("ipython_kernel_config.py", None),
    ("jupyter_server_config.py", None),
    ("jupyter_notebook_config.json", 0o644),
    (".ipython/profile_default/startup/00-start.py", None),
    ("ipy/profile_work/startup/10.py", None),
    (".jupyter/lab/user-settings/x.json", None),
    ("share/jupyter/kernels/python3/kernel.json", 0o644),
    ("sitecustomize.py", None),
    ("usercustomize.py", None),
    (".venv/lib/python3.11/site-packages/evil.pth", None),
    (".venv/pyvenv.cfg", 0o644),
    (".venv/bin/activate", 0o644),
    (".bashrc", 0o644),
    (".gitconfig", None),
    (".pre-commit-config.yaml", 0o644),
    (".husky/pre-commit", 0o644),
]
ORDINARY = [
    "src/app.py",
    "README.md",
    "notes/git.md",
    "tests/conftest.py",
    "setup.py",
    "Makefile",
    "config.json",
    "startup/main.py",
    "bin/report.txt",
    "git/notes.txt",
]


class Asker:
    """Stands in for the permission desk: records what was asked, answers ``choice``."""

    def __init__(self, choice: str | None) -> None:
        self.choice = choice
        self.asked: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []

    async def __call__(self, call: Mapping[str, Any], options: Sequence[Mapping[str, Any]]) -> str | None:
        self.asked.append((dict(call), [dict(o) for o in options]))
        return self.choice


def files(tmp_path: Path, asker: Any) -> tuple[ClientFiles, list[AgentSessionUpdate], Path]:
    folder = tmp_path / "work"
    folder.mkdir(exist_ok=True)
    lines: list[AgentSessionUpdate] = []
    client = ClientFiles(
        folders=(folder,),
        read=True,
        write=True,
        notebooks=False,
        max_bytes=1 << 20,
        record=lines.append,
        ask=asker,
    )
    return client, lines, folder


def make(folder: Path, relative: str, mode: int | None) -> Path:
    target = folder / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    if mode is not None:
        target.write_bytes(b"old bytes\n")
        target.chmod(mode)
    return target


async def refused(call: Any, params: dict[str, Any]) -> str:
    with pytest.raises(AcpRpcError) as caught:
        await call(params)
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message
    return message


@pytest.mark.parametrize(("relative", "mode"), RUNS_CODE)
async def test_a_write_that_runs_code_asks_and_a_refusal_leaves_the_file_as_it_was(
    tmp_path: Path, relative: str, mode: int | None
) -> None:
    client, lines, folder = files(tmp_path, Asker("skip"))
    target = make(folder, relative, mode)
    before = sorted(str(p) for p in folder.rglob("*"))
    message = await refused(client.write, {"path": str(target), "content": "[core]\n\tfsmonitor = evil\n"})
    assert "not written" in message and str(target) in message
    (call, options), *more = client._ask.asked  # type: ignore[attr-defined]
    assert not more
    assert call["kind"] == "edit" and call["title"].startswith(f"Write {relative}")
    why = call["rawInput"]["runsCode"]
    assert why and why in call["title"] and why in message  # the buttons and the agent both say why
    (diff,) = call["content"]
    assert diff["type"] == "diff" and diff["path"] == str(target)
    assert diff["newText"] == "[core]\n\tfsmonitor = evil\n"
    assert diff.get("oldText") == ("old bytes\n" if mode is not None else None)
    assert [o["kind"] for o in options] == ["allow_once", "reject_once"]
    if mode is None:
        assert not target.exists()
    else:
        assert target.read_bytes() == b"old bytes\n" and stat.S_IMODE(target.stat().st_mode) == mode
    assert sorted(str(p) for p in folder.rglob("*")) == before and lines == []  # no temporary file


@pytest.mark.parametrize(("relative", "mode"), RUNS_CODE[:3] + RUNS_CODE[8:10])
async def test_a_write_that_runs_code_is_written_once_allowed(
    tmp_path: Path, relative: str, mode: int | None
) -> None:
    client, lines, folder = files(tmp_path, Asker("write"))
    target = make(folder, relative, mode)
    assert await client.write({"path": str(target), "content": "new\n"}) == {}
    assert target.read_text() == "new\n"
    if mode is not None:
        assert stat.S_IMODE(target.stat().st_mode) == mode
    (line,) = lines
    assert line.raw["path"] == str(target) and line.raw["newText"] == "new\n"


async def test_nobody_to_ask_is_a_refusal(tmp_path: Path) -> None:
    client, _, folder = files(tmp_path, Asker(None))
    target = make(folder, ".git/config", 0o644)
    assert "did not allow it" in await refused(client.write, {"path": str(target), "content": "x"})
    assert target.read_bytes() == b"old bytes\n"
    bare, _, _ = files(tmp_path, None)  # no desk at all: the same refusal
    assert "did not allow it" in await refused(bare.write, {"path": str(target), "content": "x"})


@pytest.mark.parametrize("relative", ORDINARY)
async def test_an_ordinary_file_is_written_without_asking(tmp_path: Path, relative: str) -> None:
    client, lines, folder = files(tmp_path, Asker("skip"))
    target = make(folder, relative, 0o644)
    await client.write({"path": str(target), "content": "fine\n"})
    assert target.read_text() == "fine\n" and client._ask.asked == []  # type: ignore[attr-defined]
    assert len(lines) == 1


async def test_a_hard_link_is_neither_read_nor_written(tmp_path: Path) -> None:
    client, lines, folder = files(tmp_path, Asker("write"))
    outside = tmp_path / "secret.txt"
    outside.write_text("secret\n")
    os.link(outside, folder / "notes.txt")
    message = await refused(client.read, {"path": str(folder / "notes.txt")})
    assert "hard link" in message and "secret" not in message
    assert "hard link" in await refused(client.write, {"path": str(folder / "notes.txt"), "content": "x"})
    assert outside.read_text() == "secret\n" and (folder / "notes.txt").read_text() == "secret\n"
    assert lines == [] and client._ask.asked == []  # type: ignore[attr-defined]


async def test_a_symlink_swapped_while_the_path_is_resolved_is_a_one_line_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The link is seen by ``lstat`` and replaced by a file before ``readlink``: resolving fails with
    ``OSError`` (EINVAL), which used to escape as a traceback."""
    client, lines, folder = files(tmp_path, Asker("write"))
    (folder / "real.txt").write_text("real\n")
    swap = folder / "swap"
    real_readlink = os.readlink

    def racing(path: Any, *args: Any, **kwargs: Any) -> Any:
        if os.fspath(path) == str(swap) and swap.is_symlink():
            swap.unlink()
            swap.write_text("now a file\n")
        return real_readlink(path, *args, **kwargs)

    for call in (client.read, client.write):
        swap.unlink(missing_ok=True)
        swap.symlink_to(folder / "real.txt")
        monkeypatch.setattr(os, "readlink", racing)
        message = await refused(call, {"path": str(swap), "content": "x"})
        monkeypatch.setattr(os, "readlink", real_readlink)
        assert str(swap) in message and "changed while" in message
    (folder / "loop").symlink_to(folder / "loop")  # a loop: RuntimeError on Python 3.11, not OSError
    for call in (client.read, client.write):
        assert "changed while" in await refused(call, {"path": str(folder / "loop" / "x"), "content": "x"})
    assert (folder / "real.txt").read_text() == "real\n" and lines == []


# -- through the permission desk and its policies --------------------------------------------------


def desk_files(tmp_path: Path, policy: PermissionPolicy) -> tuple[ClientFiles, list[AgentSessionUpdate]]:
    lines: list[AgentSessionUpdate] = []
    desk = PermissionDesk(record=lines.append, on_blocked=lambda: None, on_answered=lambda: None)
    folder = tmp_path / "work"
    folder.mkdir(exist_ok=True)
    desk.add(policy, str(folder))

    async def ask(call: Mapping[str, Any], options: Sequence[Mapping[str, Any]]) -> str | None:
        return await desk.ask_for_client(call, options, open_=True)

    client = ClientFiles(
        folders=(folder,),
        read=True,
        write=True,
        notebooks=False,
        max_bytes=1 << 20,
        record=lines.append,
        ask=ask,
    )
    return client, lines


@pytest.mark.parametrize(
    "policy",
    [
        PermissionPolicy("allow *", otherwise="allow"),
        PermissionPolicy("allow edit"),
        PermissionPolicy("allow edit inside"),
        PermissionPolicy("reject edit", "allow code"),
    ],
)
async def test_allow_star_or_allow_edit_does_not_allow_a_write_that_runs_code(
    tmp_path: Path, policy: PermissionPolicy
) -> None:
    client, lines = desk_files(tmp_path, policy)
    target = make(tmp_path / "work", ".git/hooks/pre-commit", 0o755)
    assert "not written" in await refused(client.write, {"path": str(target), "content": "rm -rf ~\n"})
    assert target.read_bytes() == b"old bytes\n" and stat.S_IMODE(target.stat().st_mode) == 0o755
    request, decision = (line.raw for line in lines)
    assert request["title"] == decision["title"] and decision["optionId"] in (None, "skip")
    assert "decidedBy" in decision
    # An ordinary file under the same policies needs no permission at all.
    if policy.rules[0].answer == "allow":
        await client.write({"path": str(tmp_path / "work" / "app.py"), "content": "x = 1\n"})


async def test_only_a_rule_naming_code_allows_a_write_that_runs_code(tmp_path: Path) -> None:
    client, lines = desk_files(tmp_path, PermissionPolicy("allow code"))
    target = make(tmp_path / "work", ".git/config", 0o644)
    assert await client.write({"path": str(target), "content": "[core]\n"}) == {}
    assert target.read_text() == "[core]\n"
    request, decision, written = lines
    assert request.raw["title"].startswith("Write .git/config: version-control internals")
    assert decision.raw["decidedBy"] == "policy rule 1: allow code" and decision.raw["optionId"] == "write"
    assert written.raw["path"] == str(target)


# -- through a real agent ----------------------------------------------------------------------------


async def agent_writes(handle: silo_nb.AgentSessionHandle, asked: dict[str, Any]) -> dict[str, Any]:
    updates: list[AgentSessionUpdate] = []
    handle.on_update(updates.append)
    with anyio.fail_after(60):
        await handle.prompt([{"type": "text", "text": json.dumps(asked)}])
    report: dict[str, Any] = json.loads(next(u.text for u in updates if u.text))
    return report


async def test_an_agent_writing_git_config_and_a_hook_is_asked_and_refused(workspace: Workspace) -> None:
    workspace.add_profiles(raw_agent("writes-files"))
    git = workspace.folder / ".git"
    (git / "hooks").mkdir(parents=True)
    (git / "config").write_text("[core]\n")
    (git / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    (git / "hooks" / "pre-commit").chmod(0o755)
    asked = {
        "write": [
            [".git/config", "[core]\n\tfsmonitor = touch pwned\n"],
            [".git/hooks/pre-commit", "#!/bin/sh\ntouch pwned\n"],
            ["jupyter_server_config.py", "import os\n"],
            ["notes.md", "fine\n"],
        ]
    }
    svc = workspace.service()
    async with await svc.sessions.connect("raw-writes-files") as handle:
        report = await agent_writes(handle, asked)  # nobody listens: nothing that runs code is written
        for relative in (".git/config", ".git/hooks/pre-commit", "jupyter_server_config.py"):
            assert "not written" in report["wrote"][relative]["message"]
        assert report["wrote"]["notes.md"] == {}
        handle.on_permission(PermissionPolicy("allow *", otherwise="allow"))
        report = await agent_writes(handle, asked)
        assert all("not written" in report["wrote"][r]["message"] for r, _ in asked["write"][:3])
    assert (git / "config").read_text() == "[core]\n"
    assert (git / "hooks" / "pre-commit").read_text() == "#!/bin/sh\n"
    assert stat.S_IMODE((git / "hooks" / "pre-commit").stat().st_mode) == 0o755
    assert not (workspace.folder / "jupyter_server_config.py").exists()


async def test_an_agent_writing_git_config_is_written_once_the_user_allows_it(workspace: Workspace) -> None:
    workspace.add_profiles(raw_agent("writes-files"))
    (workspace.folder / ".git").mkdir()
    svc = workspace.service()
    async with await svc.sessions.connect("raw-writes-files") as handle:
        titles: list[str] = []

        def allow(request: silo_nb.AgentPermissionRequest) -> None:
            titles.append(request.title)
            request.respond("write")

        handle.on_permission(allow)
        report = await agent_writes(handle, {"write": [[".git/config", "[user]\n"]]})
    assert report["wrote"][".git/config"] == {}
    assert (workspace.folder / ".git" / "config").read_text() == "[user]\n"
    (title,) = titles
    assert title.startswith("Write .git/config: version-control internals run commands")


async def test_an_agent_gets_one_line_for_a_hard_link_and_a_symlink_loop_and_nothing_is_logged(
    workspace: Workspace, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    workspace.add_profiles(raw_agent("writes-files"))
    outside = tmp_path / "outside-secret.txt"
    outside.write_text("secret\n")
    os.link(outside, workspace.folder / "linked.txt")
    (workspace.folder / "loop").symlink_to(workspace.folder / "loop")
    caplog.set_level(logging.DEBUG, logger="silo_nb")
    svc = workspace.service()
    async with await svc.sessions.connect("raw-writes-files") as handle:
        report = await agent_writes(
            handle,
            {"write": [["linked.txt", "x"], ["loop/x", "x"]], "read": ["linked.txt", "loop/x"]},
        )
    for answers in (report["wrote"], report["read"]):
        assert "hard link" in answers["linked.txt"]["message"]
        assert "changed while" in answers["loop/x"]["message"]
        assert all("\n" not in a["message"] and "secret" not in a["message"] for a in answers.values())
    assert outside.read_text() == "secret\n"
    assert not [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
