"""Permission policies: rules by tool kind, place and option kind; decisions journaled like a human's."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest

import silo_nb
from silo_nb import PermissionPolicy, Rule
from silo_nb.model.agent_requests import AgentPermissionRequest
from silo_nb.updates.parse import parse_permission_options, parse_tool_call
from tests.conftest import Workspace, demo_agent

OPTIONS = [
    {"optionId": "yes", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "always", "name": "Always", "kind": "allow_always"},
    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
]


def request(kind: str | None, *paths: str, options: list[dict[str, Any]] = OPTIONS) -> AgentPermissionRequest:
    call: dict[str, Any] = {"toolCallId": "c1", "title": "x", "locations": [{"path": p} for p in paths]}
    if kind is not None:
        call["kind"] = kind
    return AgentPermissionRequest(
        tool_call_id="c1",
        title="x",
        options=parse_permission_options(options),
        tool_call=parse_tool_call(call),
        request_id="silo-permission-1",
    )


def test_rules_by_kind_place_and_option_kind(tmp_path: Path) -> None:
    cwd = str(tmp_path)
    policy = PermissionPolicy("allow read", "allow edit inside", "reject edit outside", name="safe")
    assert policy.decide(request("read", "/etc/passwd"), cwd) == ("yes", "safe rule 1: allow read")
    assert policy.decide(request("edit", "notes.md"), cwd) == ("yes", "safe rule 2: allow edit inside")
    assert policy.decide(request("edit", str(tmp_path / "a" / "b.py")), cwd)[0] == "yes"
    assert policy.decide(request("edit", "../elsewhere.md"), cwd) == (
        "no",
        "safe rule 3: reject edit outside",
    )
    # One path outside is enough to be outside; a call naming no path is neither inside nor outside.
    assert policy.decide(request("edit", "ok.md", "/tmp/x"), cwd)[0] == "no"
    assert policy.decide(request("edit"), cwd) == (None, "safe otherwise: cancel")
    assert policy.decide(request("execute", "run.sh"), cwd) == (None, "safe otherwise: cancel")
    assert policy.decide(request(None), cwd)[0] is None  # unknown kind: only "*" rules match


def test_symlinks_out_of_the_workspace_are_outside(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "link").symlink_to(tmp_path)
    policy = PermissionPolicy("allow edit inside")
    assert policy.decide(request("edit", "link/secret"), str(tmp_path / "ws"))[0] is None


def test_answers_pick_the_least_lasting_offered_option() -> None:
    assert PermissionPolicy("allow *").decide(request("read"), "/")[0] == "yes"
    assert PermissionPolicy("allow_always *").decide(request("read"), "/")[0] == "always"
    only_always = [OPTIONS[1], OPTIONS[2]]
    assert PermissionPolicy("allow *").decide(request("read", options=only_always), "/")[0] == "always"
    # An answer the request does not offer does not match: the next rule (or otherwise) decides.
    no_reject = OPTIONS[:2]
    policy = PermissionPolicy("reject edit", otherwise="allow")
    assert policy.decide(request("edit", options=no_reject), "/") == ("yes", "policy otherwise: allow")
    assert (
        PermissionPolicy(Rule("reject", tool_kind=("edit", "delete"))).decide(request("delete"), "/")[0]
        == "no"
    )
    assert PermissionPolicy({"answer": "cancel", "tool_kind": "read"}, otherwise="allow").decide(
        request("read"), "/"
    ) == (None, "policy rule 1: cancel read")


def test_bad_rules_say_what_to_write() -> None:
    with pytest.raises(ValueError, match="use allow, reject, cancel or an option kind"):
        PermissionPolicy("approve read")
    with pytest.raises(ValueError, match=r"write e\.g\. 'allow read'"):
        PermissionPolicy("allow read inside now please")
    with pytest.raises(ValueError, match="use 'inside' or 'outside'"):
        Rule("allow", where="near")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="use allow, reject, cancel"):
        PermissionPolicy(otherwise="yes")
    with pytest.raises(TypeError, match="a Rule, a string or a dict"):
        PermissionPolicy(3)  # type: ignore[arg-type]


def test_policies_pickle_and_print() -> None:
    policy = PermissionPolicy("allow read", "reject edit outside", otherwise="reject")
    assert pickle.loads(pickle.dumps(policy)) == policy
    assert repr(policy) == "PermissionPolicy('allow read', 'reject edit outside', otherwise='reject')"


def journal_lines(svc: silo_nb.AgentsService, session_id: str) -> list[dict[str, Any]]:
    path = svc.sessions.journals.path(svc.workspace_id, session_id)
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize(
    ("rules", "option", "status"),
    [(("allow edit inside",), "allow-once", "completed"), (("reject edit",), "reject-once", "failed")],
)
async def test_an_attached_policy_answers_and_is_journaled_like_a_human(
    workspace: Workspace, rules: tuple[str, ...], option: str, status: str
) -> None:
    workspace.add_profiles(demo_agent("demo-sub"))
    svc = workspace.service(subprocess=True)
    seen: list[str] = []
    svc.subscribe(lambda infos: seen.extend(info.activity for info in infos))
    async with await svc.sessions.connect("demo-sub", cwd=str(workspace.folder)) as handle:
        handle.on_permission(PermissionPolicy(*rules, name="unattended"))
        await handle.prompt([{"type": "text", "text": "edit the notes"}])
        assert handle.pending_permissions == ()
        lines = journal_lines(svc, handle.session_id)
    decision = next(line for line in lines if line["kind"] == "permission_decision")
    assert decision["raw"]["optionId"] == option
    assert decision["raw"]["decidedBy"] == f"unattended rule 1: {rules[0]}"
    edit = [
        line for line in lines if line.get("toolCall", {}).get("toolCallId") == decision["raw"]["toolCallId"]
    ]
    assert edit[-1]["toolCall"]["status"] == status
    assert "working" in seen and "blocked" not in seen  # the policy answered at once, never blocked


async def test_without_a_policy_nothing_is_approved(workspace: Workspace) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        await handle.prompt([{"type": "text", "text": "edit the notes"}])
        lines = journal_lines(svc, handle.session_id)
    assert not any(line["kind"] == "permission_decision" for line in lines)
    statuses = [line["toolCall"].get("status") for line in lines if line["kind"] == "tool_call_update"]
    assert "completed" in statuses  # the read
    assert lines[-1]["kind"] == "turn_end" and lines[-1]["raw"]["stopReason"] == "cancelled"


def test_code_runs_only_where_a_rule_names_it(tmp_path: Path) -> None:
    """A request to run code in the kernel (kind ``code``) is never allowed by ``*`` or ``otherwise``:
    only ``allow code`` allows it; ``reject *`` and ``cancel`` still apply to it."""
    cwd, code = str(tmp_path), request("code")
    assert PermissionPolicy("allow *", otherwise="allow").decide(code, cwd)[0] is None
    assert PermissionPolicy("allow read", "allow edit").decide(code, cwd) == (
        None,
        "policy otherwise: cancel",
    )
    assert PermissionPolicy("allow *").decide(request("read"), cwd)[0] == "yes"  # other kinds as before
    assert PermissionPolicy("allow code").decide(code, cwd) == ("yes", "policy rule 1: allow code")
    assert PermissionPolicy("allow read,code").decide(code, cwd)[0] == "yes"
    assert PermissionPolicy("reject *", "allow code").decide(code, cwd) == ("no", "policy rule 1: reject *")
    assert PermissionPolicy(otherwise="reject").decide(code, cwd)[0] == "no"


def test_an_agent_edit_of_a_file_that_runs_code_counts_as_code(tmp_path: Path) -> None:
    """An agent's own ``edit`` of ``.git/config``, an executable file or ``ipython_config.py`` is allowed
    only by a rule naming ``code`` (issue 28); reading them, and editing ordinary files, as before."""
    cwd = str(tmp_path)
    (tmp_path / "deploy.sh").write_text("echo\n")
    (tmp_path / "deploy.sh").chmod(0o755)
    permissive = PermissionPolicy("allow edit", "allow *", otherwise="allow")
    for path in (
        ".git/config",
        str(tmp_path / ".git" / "hooks" / "pre-commit"),
        "deploy.sh",
        "ipython_config.py",
    ):
        assert permissive.decide(request("edit", path), cwd)[0] is None, path
        assert permissive.decide(request("move", "a.txt", path), cwd)[0] is None, path
        assert PermissionPolicy("allow code").decide(request("edit", path), cwd)[0] == "yes"
        assert PermissionPolicy("reject edit").decide(request("edit", path), cwd)[0] == "no"
        assert PermissionPolicy("allow read").decide(request("read", path), cwd)[0] == "yes"
    assert permissive.decide(request("edit", "src/app.py", "notes/git.md"), cwd)[0] == "yes"
