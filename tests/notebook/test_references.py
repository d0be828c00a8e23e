"""``@`` references in ``%%prompt`` (``notebook/references.py``): what each adds after the text, what is
left alone, and what is refused in one line before anything is sent."""

from __future__ import annotations

import json
import re
from typing import Any

import pandas as pd
import pytest
from IPython.core.interactiveshell import InteractiveShell

from silo_nb.model import AgentSessionInputError
from silo_nb.notebook.references import error_cell, reference_blocks
from tests.conftest import Workspace
from tests.support.shell import restart, run, shell  # noqa: F401  (a fixture)


def namespace() -> dict[str, Any]:
    return {
        "In": ["", "import pandas as pd", "df = load()", "%%prompt\nlook at @df"],
        "Out": {2: 42},
        "df": pd.DataFrame({"species": ["Adelie", None], "mass": [3750, 4500]}),
        "note": "text",
    }


def test_each_reference_adds_one_block_after_the_text_in_order_once() -> None:
    text = "compare @In[1] with @Out[2], then @df and @df again"
    blocks = reference_blocks(text, namespace(), embedded=True, images=False)
    assert [b["uri"] for b in blocks] == [
        "silo:reference/In[1]",
        "silo:reference/Out[2]",
        "silo:reference/df",
    ]
    assert blocks[0]["text"] == "import pandas as pd" and blocks[1]["text"] == "42"
    assert (
        "shape: 2 rows × 2 columns" in blocks[2]["text"] and "null counts" in blocks[2]["text"]
    )  # inspect_variable's


def test_this_is_the_cell_above_or_the_one_run_before() -> None:
    (from_page,) = reference_blocks("why does @this fail?", namespace(), embedded=True, images=False,
                                    this_source="x = 1/0")  # fmt: skip
    (from_history,) = reference_blocks("why does @this fail?", namespace(), embedded=True, images=False)
    assert from_page["text"] == "x = 1/0" and from_history["text"] == "df = load()"


def test_without_embedded_context_a_reference_is_text() -> None:
    (block,) = reference_blocks("see @In[1]", namespace(), embedded=False, images=False)
    assert block == {"type": "text", "text": "@In[1]:\nimport pandas as pd"}


@pytest.mark.parametrize("text", ["mail me at ann@example.org", "use @property here", "@@df", "x.@df"])
def test_what_is_no_reference_is_left_alone(text: str) -> None:
    assert reference_blocks(text, namespace(), embedded=True, images=False) == []


@pytest.mark.parametrize(
    ("text", "says"),
    [("@In[99]", "no In[99]"), ("@Out[7]", "no Out[7]"), ("@fig", "no figure is open")],
)
def test_an_explicit_reference_that_cannot_be_filled_is_one_line(text: str, says: str) -> None:
    import matplotlib.pyplot as plt

    plt.close("all")  # a figure another test left open would fill @fig
    with pytest.raises(AgentSessionInputError, match=re.escape(says)) as raised:
        reference_blocks(text, namespace(), embedded=True, images=True)
    assert "\n" not in str(raised.value)


def test_an_implicit_reference_is_sent_only_when_there_is_something_to_send() -> None:
    (block,) = reference_blocks("fix it", namespace(), embedded=True, images=False, also=("In[2]", "In[40]"))
    assert block["uri"] == "silo:reference/In[2]" and block["text"] == "df = load()"


def test_the_cell_a_traceback_names() -> None:
    trace = 'Traceback:\n  File "Cell In[3]", line 1\n  File "Cell In[7]", line 2\nKeyError'
    assert error_cell(trace) == "In[7]" and error_cell("KeyError: 'x'") is None


async def test_a_prompt_sends_its_references_and_the_bubble_names_them(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    shell.user_ns["penguins"] = pd.DataFrame({"species": ["Adelie", "Gentoo"], "mass": [3750, 4500]})
    restart(shell, workspace)
    await run(shell, "%silo connect demo")
    _, result = await run(shell, "%%prompt\nwhat is odd about @penguins?")
    assert result.success, result.error_in_exec
    handle = shell.user_ns["demo"]
    journal = next((workspace.data / "workspaces").rglob(f"{handle.session_id}.jsonl"))
    (prompt,) = [json.loads(x) for x in journal.read_text().splitlines() if '"user_message_chunk"' in x]
    assert prompt["text"] == "what is odd about @penguins?"
    assert [a["name"] for a in prompt["raw"]["attachments"]] == ["@penguins"]
    _, refused = await run(shell, "%%prompt\nand @In[999]?")
    assert not refused.success and "no In[999]" in str(refused.error_in_exec)
    assert handle.prompts_sent == 1
