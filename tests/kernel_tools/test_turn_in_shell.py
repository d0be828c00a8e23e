"""A ``%%prompt`` turn that uses the kernel tools, in a real ``InteractiveShell``: the demo agent (its own
MCP client, the official SDK's) starts the relay ``%silo connect`` offered it, looks at a DataFrame of the
shell's namespace and asks to run code; the answer decides what happens to the namespace."""

from __future__ import annotations

import tempfile

import pandas as pd
import pytest
from IPython.core.interactiveshell import InteractiveShell

import silo_nb
from silo_nb.notebook.magics import session_of
from silo_nb.notebook.widgets.permission_row import code_of
from tests.conftest import Workspace
from tests.support.shell import final_bundle, run, shell  # noqa: F401  (a fixture)

PENGUINS = pd.DataFrame(
    {
        "species": ["Adelie", "Gentoo", "Adelie", "Chinstrap", "Gentoo", None],
        "bill_length_mm": [39.1, 47.3, 40.3, 48.7, 50.0, 41.1],
    }
)


async def test_allowed_code_runs_in_the_namespace_and_its_plot_comes_back(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    shell.user_ns["df"] = PENGUINS.copy()
    shell.user_ns.pop("summary", None)  # the shell is the process's one InteractiveShell
    await run(shell, "%silo connect demo")
    handle = shell.user_ns["demo"]
    seen = []

    def allow_code(request: silo_nb.AgentPermissionRequest) -> None:
        seen.append(code_of(request))
        request.respond("run")

    handle.on_permission(allow_code)
    captured, result = await run(shell, "%%prompt\nlook into df and plot it")
    assert result.success, result.error_in_exec
    # The code it asked for was shown to the listener, and it ran in the shell's namespace.
    assert seen, final_bundle(captured).data["text/plain"]
    assert seen[0] is not None and "groupby('species')" in seen[0]
    summary = shell.user_ns["summary"]
    assert summary.to_dict() == PENGUINS.groupby("species")["bill_length_mm"].mean().sort_values().to_dict()
    bundle = final_bundle(captured).data
    html, markdown = bundle["text/html"], bundle["text/markdown"]
    for tool in ("list_variables", "inspect_variable", "run_code"):
        assert tool in markdown, tool
    assert "Permission: Run code in the kernel" in markdown and "Run it" in markdown
    assert "1 figure came back" in markdown
    assert html.count('class="silo-kernel-figure" src="data:image/png;base64,iVBOR') == 1
    kinds = [u.kind for u in handle.journal_updates()]
    assert kinds.count("kernel_tool") == 5  # list, inspect, run_code waiting, running and done
    assert kinds.count("permission_decision") == 1


async def test_rejected_code_leaves_the_namespace_untouched(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    shell.user_ns["df"] = PENGUINS.copy()
    shell.user_ns.pop("summary", None)  # the shell is the process's one InteractiveShell
    await run(shell, "%silo connect demo")
    handle = shell.user_ns["demo"]
    handle.on_permission(lambda request: request.respond("skip"))
    before = dict(shell.user_ns)
    captured, result = await run(shell, "%%prompt\nlook into df")
    assert result.success, result.error_in_exec
    changed = {k for k, v in shell.user_ns.items() if k not in before or before[k] is not v}
    assert changed <= {"_", "__", "___", "_i", "_ii", "_iii", "_oh", "_dh", "In", "Out"} | {
        k for k in changed if k.startswith("_i")
    }, changed
    assert "summary" not in shell.user_ns
    pd.testing.assert_frame_equal(shell.user_ns["df"], PENGUINS)
    markdown = final_bundle(captured).data["text/markdown"]
    assert "The code did not run: The user rejected it" in markdown
    assert "not run" in markdown  # the run_code card's status


async def test_no_kernel_tools_offers_the_agent_nothing(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    shell.user_ns["df"] = PENGUINS.copy()
    await run(shell, "%silo connect demo --no-kernel-tools")
    connection = session_of(shell).connections["demo"]
    assert connection.kernel_tools is None
    captured, result = await run(shell, "%%prompt\nlook into df")
    assert result.success
    assert "no notebook tools" in final_bundle(captured).data["text/markdown"]


async def test_a_socket_that_cannot_be_made_leaves_a_connection_without_the_tools(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(workspace.root / "no-such-folder"))
    _, result = await run(shell, "%silo connect demo --as nosocket")
    assert result.success, result.error_in_exec
    assert session_of(shell).connections["nosocket"].kernel_tools is None
    assert shell.user_ns["nosocket"].is_live
    assert "kernel tools are off for this connection: their socket could not be made" in caplog.text
