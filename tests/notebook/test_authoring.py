"""``%silo insert``, ``%%prompt --error``, ``{In[n]}``/``{Out[n]}`` and ``%silo add-profile`` in a real
``InteractiveShell`` (the kernel's side of ``set_next_input``: tests/integration/test_prompting_kernel.py).
"""

from __future__ import annotations

import os
import tomllib

from IPython.core.interactiveshell import InteractiveShell

from silo_nb.model.models import AgentSessionUpdate
from silo_nb.notebook.attachments import interpolate
from silo_nb.notebook.last_error import last_traceback
from silo_nb.notebook.magics.authoring import last_code_block
from silo_nb.sessions.profile_writer import profile_toml, toml_string
from tests.conftest import Workspace
from tests.support.shell import final_bundle, run, shell  # noqa: F401 - the fixture


def error_line(captured: object) -> str:
    return str(getattr(captured, "stderr", "")).strip().splitlines()[-1]


async def test_insert_puts_the_last_code_block_of_the_last_turn_in_the_next_cell(
    shell: InteractiveShell,  # noqa: F811
) -> None:
    await run(shell, "%silo connect demo")
    shell.rl_next_input = None
    captured, _ = await run(shell, "%silo insert")
    assert "has no code block" in error_line(captured)  # no turn yet
    await run(shell, "%%prompt\n/explain the greet function")
    captured, result = await run(shell, "%silo insert demo")
    assert result.success, captured.stderr
    assert shell.rl_next_input == 'def greet(name: str) -> str:\n    return f"Hello, {name}!"'
    assert "inserted 2 lines from demo's last turn below" in captured.stdout


def test_last_code_block_takes_the_last_fence_of_the_last_turn_only() -> None:
    def update(kind: str, text: str, **raw: object) -> AgentSessionUpdate:
        return AgentSessionUpdate(kind=kind, text=text, raw=dict(raw))

    first = [
        update("user_message_chunk", "one", synthesized=True),
        update("agent_message_chunk", "```\nold\n```"),
    ]
    reply = "text\n~~~python\nx = 1\n~~~\nmore\n```sh\nls -l\n``` \nbye `inline`"
    second = [update("user_message_chunk", "two", synthesized=True), update("agent_message_chunk", reply)]
    assert last_code_block(first + second) == "ls -l"
    no_code = [update("user_message_chunk", "three", synthesized=True), update("agent_message_chunk", "none")]
    assert last_code_block(first + second + no_code) is None  # the last turn's, not an older one's
    assert last_code_block([]) is None


async def test_prompt_error_attaches_the_last_traceback(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    await run(shell, "%silo connect demo")
    captured, _ = await run(shell, "%%prompt --error\nwhat went wrong here?")
    if last_traceback() is None:  # a fresh interpreter: nothing failed yet
        assert "no error in this kernel yet" in error_line(captured)
    _, failed = await run(shell, "def half(x):\n    return x / 0\nhalf(3)")
    assert not failed.success
    text = last_traceback()
    assert text is not None and text.startswith("Traceback (most recent call last):")
    assert "return x / 0" in text and text.endswith("ZeroDivisionError: division by zero")
    assert "interactiveshell.py" not in text  # the kernel's own frames are left out
    captured, result = await run(shell, "%%prompt --error\nwhat went wrong here?")
    assert result.success, captured.stderr
    markdown = final_bundle(captured).data["text/markdown"]
    assert "I see 1 attachment: silo:variable/last_error" in markdown
    assert "attached: last\\_error · text/plain" in markdown
    journal = shell.user_ns["demo"].journal_updates()
    prompt = next(u for u in reversed(journal) if u.kind == "user_message_chunk")
    assert [a["name"] for a in prompt.raw["attachments"]] == ["last_error"]


def test_in_and_out_expand_like_names() -> None:
    namespace = {"In": ["", "x = 41", "x + 1"], "Out": {2: 42}, "x": 41}
    text = "{In[1]} gave {Out[2]}; {In[9]} {Out[1]} {In} {x} {{In[1]}}"
    assert (
        interpolate(text, namespace) == "x = 41 gave 42; {In[9]} {Out[1]} ['', 'x = 41', 'x + 1'] 41 {In[1]}"
    )
    assert interpolate("{In[-1]} {x[0]}", namespace) == "x + 1 {x[0]}"  # an int has no index: as written


async def test_prompt_in_and_out_come_from_the_shell_history(shell: InteractiveShell) -> None:  # noqa: F811
    await run(shell, "%silo connect demo")
    # As a kernel runs a cell: In and Out kept.
    await shell.run_cell_async("6 * 7", store_history=True, transformed_cell="6 * 7")
    count = shell.execution_count - 1
    captured, _ = await run(shell, f"%%prompt\nwhy is {{In[{count}]}} {{Out[{count}]}}?")
    assert "why is 6 * 7 42?" in final_bundle(captured).data["text/markdown"]


async def test_add_profile_writes_a_valid_profile_and_never_another_id(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    target = workspace.config / "silo" / "profiles.toml"
    captured, result = await run(
        shell,
        "%silo add-profile --label 'My \"demo\"' --env 'NOTE=a\\b \"c\"' "
        "mine python -m silo_nb_agents.demo --x",
    )
    assert result.success, captured.stderr
    assert f"added profile mine to {target}" in captured.stdout
    data = tomllib.loads(target.read_text())
    assert data["profiles"] == [
        {
            "id": "mine",
            "label": 'My "demo"',
            "command": "python",
            "args": ["-m", "silo_nb_agents.demo", "--x"],
            "env": {"NOTE": 'a\\b "c"'},
        }
    ]
    assert oct(os.stat(target).st_mode & 0o777) == "0o600"
    listed, _ = await run(shell, "%silo profiles")
    assert (
        "mine" in listed.outputs[-1].data["text/plain"]
        and 'My "demo"' in listed.outputs[-1].data["text/plain"]
    )
    before = target.read_bytes()
    for line, says in [
        ("%silo add-profile mine python", 'a profile "mine" exists already'),
        ("%silo add-profile demo python", 'a profile "demo" exists already'),
        ("%silo add-profile Bad_Id python", 'profile "Bad_Id": id: String should match pattern'),
        ("%silo add-profile --env NOPE other python", "--env 'NOPE' is not KEY=VALUE"),
    ]:
        captured, result = await run(shell, line)
        assert not result.success and says in error_line(captured), (line, captured.stderr)
    assert target.read_bytes() == before  # nothing written by a refused one
    await run(shell, "%silo add-profile second sh -c 'echo hi'")
    assert [p["id"] for p in tomllib.loads(target.read_text())["profiles"]] == ["mine", "second"]


async def test_add_profile_leaves_a_broken_file_alone(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    target = workspace.config / "silo" / "profiles.toml"
    target.parent.mkdir(parents=True)
    target.write_text("[[profiles]\nid = 'x'\n")
    captured, result = await run(shell, "%silo add-profile mine python")
    assert not result.success and "is not valid TOML" in error_line(captured)
    assert target.read_text() == "[[profiles]\nid = 'x'\n"


def test_toml_strings_escape_what_toml_asks_for() -> None:
    nasty = 'q"uote\\ back\nnew\ttab\x7fdel\x01ctl ]] [[profiles]] é'
    entry = {"id": "x", "command": nasty, "args": [nasty], "env": {"odd key": nasty, "K": "v"}}
    assert tomllib.loads(profile_toml(entry))["profiles"] == [entry]
    assert toml_string("\x7f") == '"\\u007f"'
