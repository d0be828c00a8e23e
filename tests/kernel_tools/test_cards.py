"""A kernel tool call in the transcript: one card per call (upserted by ``callId``), in every format, with
hostile output inert and only base64 PNGs shown as images; the permission row shows the code it would run."""

from __future__ import annotations

import base64
from typing import Any

from silo_nb.model.agent_requests import AgentPermissionRequest
from silo_nb.model.models import AgentSessionUpdate
from silo_nb.notebook.render.cards.kernel_tool import kernel_tool_html, kernel_tool_markdown, kernel_tool_text
from silo_nb.notebook.widgets.permission_row import PermissionRow
from silo_nb.updates.entries import KernelToolEntry
from silo_nb.updates.parse import parse_permission_options, parse_tool_call
from silo_nb.updates.transcript import fold_all

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()


def line(**raw: Any) -> AgentSessionUpdate:
    return AgentSessionUpdate(kind="kernel_tool", raw={"synthesized": True, **raw})


def test_a_call_is_one_card_updated_in_place() -> None:
    code = "total = df['size'].sum()\ntotal"
    state = fold_all(
        [
            line(callId="kernel-1", tool="run_code", arguments={"code": code}, status="running"),
            line(callId="kernel-2", tool="list_variables", arguments={}, status="completed", output="| a |"),
            line(
                callId="kernel-1",
                tool="run_code",
                arguments={"code": code},
                status="completed",
                output="value:\n6",
                images=[PNG, "javascript:alert(1)", "iVBORw0KGgo<script>"],
            ),
        ]
    )
    first, second = state.entries
    assert isinstance(first, KernelToolEntry) and isinstance(second, KernelToolEntry)
    assert (first.call_id, first.status, first.code, first.output) == (
        "kernel-1",
        "completed",
        code,
        "value:\n6",
    )
    assert first.images == (PNG,)  # only a base64 PNG is kept as an image
    assert second.tool == "list_variables"


def test_every_format_shows_the_code_and_keeps_hostile_output_inert() -> None:
    entry = KernelToolEntry(
        call_id="kernel-1",
        tool="run_code",
        status="error",
        arguments=(("code", "print('<b>hi</b>')"),),
        output="<script>alert(1)</script>\n```\nnot a fence",
        images=(PNG,),
    )
    html = kernel_tool_html(entry)
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "&lt;b&gt;hi&lt;/b&gt;" in html and "<span style=" in html  # the code, highlighted and escaped
    assert f'src="data:image/png;base64,{PNG}"' in html and "raised an error" in html
    markdown = kernel_tool_markdown(entry)
    assert "```python" in markdown and "````" in markdown  # a fence longer than the one in the output
    assert "_1 figure (in the HTML view)_" in markdown
    text = kernel_tool_text(entry)
    assert text[0] == "kernel> run_code · raised an error" and "    >>> print('<b>hi</b>')" in text
    reading = kernel_tool_markdown(
        KernelToolEntry("k", "inspect_variable", "completed", (("name", "df"), ("rows", 5)), "shape: 3")
    )
    assert reading.startswith("* ⚙ notebook · `inspect_variable` `name='df', rows=5` — _done_")


def request(kind: str, raw_input: dict[str, Any]) -> AgentPermissionRequest:
    options = [{"optionId": "run", "name": "Run it", "kind": "allow_once"}]
    return AgentPermissionRequest(
        tool_call_id="kernel-1",
        title="Run code in the kernel",
        options=parse_permission_options(options),
        tool_call=parse_tool_call({"toolCallId": "kernel-1", "kind": kind, "rawInput": raw_input}),
        request_id="silo-permission-1",
    )


def test_the_permission_row_shows_the_code_it_would_run() -> None:
    row = PermissionRow(request("code", {"code": "df.groupby('kind').size()"}))
    assert row.code_html is not None and "groupby" in row.code_html.value and "<span" in row.code_html.value
    assert row.children[1] is row.code_html
    assert PermissionRow(request("edit", {"code": "x"})).code_html is None
    row.close_all()


def test_a_run_waiting_for_the_user_says_so_and_a_refused_one_says_not_run() -> None:
    """Issue 35: the card said "running" while the permission row still waited for the user's answer."""
    code = "df = df.dropna()"
    waiting = KernelToolEntry(call_id="k", tool="run_code", status="waiting", arguments=(("code", code),))
    for shown in (
        kernel_tool_html(waiting),
        kernel_tool_markdown(waiting),
        "\n".join(kernel_tool_text(waiting)),
    ):
        assert "waiting for you" in shown and "running" not in shown
    refused = KernelToolEntry(call_id="k", tool="run_code", status="refused", arguments=(("code", code),))
    for shown in (
        kernel_tool_html(refused),
        kernel_tool_markdown(refused),
        "\n".join(kernel_tool_text(refused)),
    ):
        assert "not run" in shown and "running" not in shown
