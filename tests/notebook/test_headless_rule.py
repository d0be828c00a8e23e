"""The headless rule's parts, without a kernel (issue 34, item 3): the key a ``%%prompt`` turn is restored
under, the sampling switch, and what ``%silo connect`` / ``%%prompt`` do when a run samples. The whole
rule, in real kernels run by nbclient and papermill, is ``tests/integration/test_headless_restore.py``."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

from silo_nb.notebook.cell_records import RunDigest, prompt_cell_key
from silo_nb.sessions.sampling import SAMPLE_ENV, sampling_asked
from tests.conftest import Workspace
from tests.support.shell import final_bundle, restart, run, shell  # noqa: F401  (a fixture)


def fake_shell(history: list[str], cell_id: str | None = None) -> Any:
    parent = {"metadata": {"cellId": cell_id} if cell_id else {}}
    kernel = SimpleNamespace(get_parent=lambda channel: parent)
    return SimpleNamespace(kernel=kernel, history_manager=SimpleNamespace(input_hist_raw=history))


@pytest.fixture(autouse=True)
def _headless(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.delenv(SAMPLE_ENV, raising=False)


def test_headless_key_holds_the_cells_run_before() -> None:
    source = "\n%%prompt\nsummarise"
    penguins = ["", "%load_ext silo_nb", "data = 'penguins'", source]
    iris = ["", "%load_ext silo_nb", "data = 'iris'", source]
    key = prompt_cell_key(fake_shell(penguins), source, 1, RunDigest())
    assert key == prompt_cell_key(fake_shell(list(penguins)), source, 1, RunDigest())  # the same run again
    assert key != prompt_cell_key(fake_shell(iris), source, 1, RunDigest())  # another notebook
    assert key.startswith("src-1-")


def test_the_digest_read_a_cell_at_a_time_is_the_digest_of_the_whole_run() -> None:
    history = ["", "a = 1"]
    growing, shell_ = RunDigest(), fake_shell(history)
    growing.of(shell_)
    history += ["b = 2", "%%prompt\nhi"]
    assert growing.of(shell_) == RunDigest().of(fake_shell(list(history)))
    del history[1:]  # %reset: the history starts over, and so does the digest
    assert growing.of(shell_) == RunDigest().of(fake_shell([""]))


def test_a_named_notebook_or_a_cell_id_needs_no_digest(monkeypatch: pytest.MonkeyPatch) -> None:
    one, other = fake_shell(["", "x = 1", "p"], "cell-7"), fake_shell(["", "x = 2", "p"], "cell-7")
    assert prompt_cell_key(one, "p", 1, RunDigest()) == "cell-7"
    assert prompt_cell_key(other, "p", 1, RunDigest()) == "cell-7"
    monkeypatch.setenv("JPY_SESSION_NAME", "/work/analysis.ipynb")  # Jupyter Server named the notebook
    one, other = fake_shell(["", "x = 1", "p"]), fake_shell(["", "x = 2", "p"])
    assert prompt_cell_key(one, "p", 1, RunDigest()) == prompt_cell_key(other, "p", 1, RunDigest())


@pytest.mark.parametrize(
    ("namespace", "env", "expected"),
    [
        ({}, None, False),
        ({}, "1", True),
        ({}, " TRUE ", True),
        ({}, "off", False),
        ({"silo_sample": True}, None, True),
        ({"silo_sample": 1}, None, True),
        ({"silo_sample": "yes"}, None, True),
        ({"silo_sample": False}, "1", False),  # the notebook's own parameter wins
        ({"silo_sample": None}, None, False),
    ],
)
def test_sampling_switch(
    namespace: dict[str, Any], env: str | None, expected: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if env is not None:
        monkeypatch.setenv(SAMPLE_ENV, env)
    assert sampling_asked(namespace) is expected


def test_sampling_reads_the_main_namespace_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.modules["__main__"], "silo_sample", True, raising=False)
    assert sampling_asked() is True


@pytest.mark.parametrize(("namespace", "env"), [({}, "maybe"), ({"silo_sample": "sometimes"}, None)])
def test_a_sampling_value_neither_on_nor_off_says_what_to_set(
    namespace: dict[str, Any], env: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if env is not None:
        monkeypatch.setenv(SAMPLE_ENV, env)
    with pytest.raises(ValueError, match=r"is neither on nor off — set it to True \(1\)") as error:
        sampling_asked(namespace)
    assert "\n" not in str(error.value)


async def test_a_sampling_run_connects_anew_and_asks_the_agent(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await run(shell, "%silo connect demo")
    first = shell.user_ns["demo"].session_id
    await run(shell, "%%prompt\nfirst question")
    restart(shell, workspace)
    # papermill -p silo_sample True (through monkeypatch: the shell is shared by the tests)
    monkeypatch.setitem(shell.user_ns, "silo_sample", True)
    await run(shell, "%silo connect demo")
    handle = shell.user_ns["demo"]
    assert handle.session_id != first and handle.resume_outcome == "new"
    await run(shell, "%silo connect demo")  # run again in the same kernel: the same session, re-shown
    assert shell.user_ns["demo"] is handle
    again, result = await run(shell, "%%prompt\nfirst question")
    assert result.success, result.error_in_exec
    assert not final_bundle(again).metadata["silo"].get("restored")
    assert handle.prompts_sent == 1


async def test_fresh_asks_the_agent_even_with_the_turn_in_the_carried_transcript(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    await run(shell, "%silo connect demo")
    await run(shell, "%%prompt\nfirst question")
    restart(shell, workspace)
    await run(shell, "%silo connect demo --fresh")  # a new session; the old transcript carried in its journal
    handle = shell.user_ns["demo"]
    again, _ = await run(shell, "%%prompt\nfirst question")
    assert not final_bundle(again).metadata["silo"].get("restored")
    assert handle.prompts_sent == 1


@pytest.mark.parametrize("cell", ["%silo connect demo", "%%prompt\nhello"])
async def test_a_bad_sampling_value_is_one_line_and_sends_nothing(
    shell: InteractiveShell,  # noqa: F811
    cell: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if cell.startswith("%%prompt"):
        await run(shell, "%silo connect demo")
    monkeypatch.setenv(SAMPLE_ENV, "maybe")
    captured, result = await run(shell, cell)
    assert not result.success
    said = (captured.stderr + captured.stdout).strip()
    assert "SILO_NB_SAMPLE='maybe' is neither on nor off" in said and "Traceback" not in said
    if cell.startswith("%%prompt"):
        assert shell.user_ns["demo"].prompts_sent == 0
