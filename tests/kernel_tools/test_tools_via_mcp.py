"""Every kernel tool through the official ``mcp`` client, against the relay and the kernel-side server:
pandas and polars frames, NumPy, the user's variables only, cells, figures, code that runs, fails or is
refused, and bad arguments answered in one line."""

from __future__ import annotations

import asyncio
import base64
import types

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import polars as pl

from tests.conftest import Workspace
from tests.kernel_tools.tool_session import tool_session

PNG = b"\x89PNG\r\n\x1a\n"


def frames() -> dict[str, object]:
    data = {"species": ["Adelie", "Gentoo", None, "Adelie"], "mass": [3750.0, 5000.0, 4100.0, None]}

    class Point:
        pass

    return {
        "penguins": pd.DataFrame(data),
        "pl_penguins": pl.DataFrame(data),
        "masses": pd.Series(data["mass"], name="mass"),
        "pl_masses": pl.Series("mass", data["mass"]),
        "grid": np.arange(12.0).reshape(3, 4),
        "note": "hello",
        "np": np,  # a module
        "helper": lambda: 1,  # a function
        "Point": Point,  # a class
        "_private": 1,
    }


async def test_the_server_lists_its_tools_with_their_arguments(workspace: Workspace) -> None:
    async with tool_session(workspace, {}) as session:
        listed = await session.client.list_tools()
    tools = {tool.name: tool for tool in listed.tools}
    kernel = ["inspect_variable", "list_variables", "read_cells", "run_code", "show_figure"]
    cells = [
        "delete_cell",
        "edit_cell",
        "insert_cell",
        "move_cell",
        "read_notebook",
        "replace_cell",
        "run_cell",
    ]
    assert sorted(tools) == sorted(kernel + cells)
    assert tools["edit_cell"].input_schema["required"] == ["cell_id", "old", "new"]
    assert tools["insert_cell"].input_schema["required"] == ["source"]
    for name in ("insert_cell", "edit_cell", "replace_cell", "delete_cell", "move_cell", "run_cell"):
        annotations = tools[name].annotations
        assert annotations is not None and annotations.destructive_hint and not annotations.read_only_hint
    assert (
        tools["read_notebook"].annotations is not None and tools["read_notebook"].annotations.read_only_hint
    )
    assert tools["inspect_variable"].input_schema["required"] == ["name"]
    assert set(tools["inspect_variable"].input_schema["properties"]) == {"name", "rows"}
    assert tools["run_code"].input_schema["required"] == ["code"]
    assert (
        tools["list_variables"].annotations is not None and tools["list_variables"].annotations.read_only_hint
    )


async def test_list_and_inspect_pandas_polars_and_numpy(workspace: Workspace) -> None:
    namespace = frames()
    async with tool_session(workspace, namespace) as session:
        error, listing, _ = await session.call("list_variables")
        assert not error
        for name in ("penguins", "pl_penguins", "masses", "pl_masses", "grid", "note"):
            assert f"| {name} |" in listing, name
        for name in ("np", "helper", "Point", "_private"):
            assert f"| {name} |" not in listing, name
        assert "| penguins | DataFrame (pandas) | 4 × 2 |" in listing
        assert "| pl_penguins | DataFrame (polars) | 4 × 2 |" in listing
        assert "| grid | ndarray (numpy) | 3 × 4 | 96 B |" in listing

        _, pandas_text, _ = await session.call("inspect_variable", name="penguins", rows=2)
        assert "shape: 4 rows × 2 columns" in pandas_text and "- mass: float64" in pandas_text
        assert "| 0 | Adelie | 3750.0 |" in pandas_text and "| 2 |" not in pandas_text.split("describe")[0]
        assert "| mean | 4283.333333333333 |" in pandas_text
        assert "null counts: species: 1, mass: 1" in pandas_text

        _, polars_text, _ = await session.call("inspect_variable", name="pl_penguins", rows=3)
        assert "DataFrame (polars)" in polars_text and "- species: String" in polars_text
        assert "| Gentoo | 5000.0 |" in polars_text and "null counts: species: 1, mass: 1" in polars_text

        _, series_text, _ = await session.call("inspect_variable", name="masses")
        assert "length: 4; dtype: float64" in series_text and "nulls: 1" in series_text
        _, pl_series_text, _ = await session.call("inspect_variable", name="pl_masses")
        assert "dtype: Float64" in pl_series_text and "nulls: 1" in pl_series_text

        _, array_text, _ = await session.call("inspect_variable", name="grid")
        assert "shape: 3 × 4; dtype: float64" in array_text and "min: 0.0; max: 11.0; mean: 5.5" in array_text

        error, missing, _ = await session.call("inspect_variable", name="pengiuns")
        assert (
            error
            and missing
            == "No variable named 'pengiuns' in the notebook. Did you mean: penguins, pl_penguins?"
        )
        error, bad_rows, _ = await session.call("inspect_variable", name="penguins", rows=500)
        assert error and bad_rows == "rows must be a whole number from 0 to 50 (got 500)."
    assert [line["status"] for line in session.lines()] == ["completed"] * 6 + ["failed", "failed"]


async def test_read_cells_and_show_figure(workspace: Workspace) -> None:
    namespace = {"In": ["", "x = 21", "x * 2", "print(x)"], "Out": {2: 42}}
    plt.close("all")
    async with tool_session(workspace, namespace) as session:
        _, cells, _ = await session.call("read_cells", last=2)
        assert (
            cells
            == "In [2]:\n```python\nx * 2\n```\nOut [2]:\n```\n42\n```\n\nIn [3]:\n```python\nprint(x)\n```"
        )
        error, bad, _ = await session.call("read_cells", last=0)
        assert error and bad == "last must be a whole number from 1 to 20 (got 0)."
        _, none, images = await session.call("show_figure")
        assert "no open matplotlib figure" in none and images == []
        figure, axes = plt.subplots(figsize=(4, 3), dpi=50)
        axes.plot([1, 3, 2])
        _, shown, images = await session.call("show_figure")
        plt.close(figure)
    assert shown == f"figure {figure.number}: 200×150 px, 1 axes"
    assert len(images) == 1 and base64.b64decode(images[0]).startswith(PNG)
    assert session.lines()[-1]["images"] == images  # the transcript keeps it too (small already)


async def test_run_code_returns_what_a_cell_shows_and_its_figures(workspace: Workspace) -> None:
    namespace: dict[str, object] = {"values": [3, 1, 2]}
    open_before = plt.get_fignums()  # another test's figures may be open: they stay as they are
    async with tool_session(workspace, namespace) as session:
        code = (
            "import matplotlib.pyplot as plt\n"
            "import sys\n"
            "total = sum(values)\n"
            "print('the total is', total)\n"
            "print('careful', file=sys.stderr)\n"
            "fig, ax = plt.subplots()\n"
            "ax.plot(values)\n"
            "plt.show()\n"
            "sorted(values)"
        )
        error, text, images = await session.call("run_code", code=code)
        assert not error, text
        assert text.startswith(
            "status: completed\n\nstdout:\nthe total is 6\n\nstderr:\ncareful\n\nvalue:\n[1, 2, 3]"
        )
        assert len(images) == 1 and base64.b64decode(images[0]).startswith(PNG)
        assert namespace["total"] == 6 and plt.get_fignums() == open_before  # set in the namespace; closed
        error, failed, _ = await session.call("run_code", code="values.append(4)\n1 / 0")
        assert error and "status: error" in failed and "ZeroDivisionError: division by zero" in failed
        assert "<run_code " in failed and "line 2" in failed and "code_runner.py" not in failed
        assert namespace["values"] == [3, 1, 2, 4]  # what ran before the error stays done, as in a cell
        error, syntax, _ = await session.call("run_code", code="def (:")
        assert error and "SyntaxError" in syntax
        error, exited, _ = await session.call("run_code", code="raise SystemExit(3)")
        assert error and "SystemExit: 3" in exited
        error, empty, _ = await session.call("run_code", code="   ")
        assert error and empty == "run_code needs the code to run, as a non-empty string."
    requests = session.code_requests
    assert [r.tool_call.raw_input for r in requests if r.tool_call] == [
        {"code": code},
        {"code": "values.append(4)\n1 / 0"},
        {"code": "def (:"},
        {"code": "raise SystemExit(3)"},
    ]  # every run asked first (the empty one was refused before asking)
    done = [line for line in session.lines() if line["status"] not in {"waiting", "running"}]
    assert [line["status"] for line in done] == ["completed", "error", "error", "error", "failed"]
    assert done[0]["arguments"] == {"code": code} and len(done[0]["images"]) == 1
    first = [line["status"] for line in session.lines() if line["callId"] == done[0]["callId"]]
    assert first == ["waiting", "running", "completed"]  # "running" only once the user allowed it


async def test_a_rejected_or_unanswered_run_runs_nothing(workspace: Workspace) -> None:
    namespace: dict[str, object] = {"count": 0}
    async with tool_session(workspace, namespace, answer_code="skip") as session:
        error, text, _ = await session.call("run_code", code="count = 1")
        assert error and text == "The user rejected it: the code did not run, and nothing changed."
    assert namespace == {"count": 0}
    decisions = session.lines("permission_decision")
    assert [d["optionId"] for d in decisions if d["toolCallId"].startswith("kernel-")] == ["skip"]
    assert [line["status"] for line in session.lines()] == ["waiting", "refused"]  # never "running"


async def test_a_run_asked_in_a_turn_that_is_stopped_runs_nothing(workspace: Workspace) -> None:
    namespace: dict[str, object] = {"count": 0}
    async with tool_session(workspace, namespace, answer_code=None) as session:
        call = asyncio.create_task(session.call("run_code", code="count = 1"))
        while not session.code_requests:
            await asyncio.sleep(0.01)
        session.handle.cancel()  # the Stop button: pending permissions are answered "cancelled"
        error, text, _ = await call
    assert error and "did not allow it" in text and namespace == {"count": 0}


def test_namespace_filter_keeps_user_values_only() -> None:
    from silo_nb.kernel_tools.namespace import is_user_variable

    assert is_user_variable("df", pd.DataFrame(), ())
    assert not is_user_variable("os", types.ModuleType("os"), ())
    assert not is_user_variable("In", [], {"In"})


async def test_run_code_drawing_on_a_figure_that_was_open_sends_it_and_leaves_it_open(
    workspace: Workspace,
) -> None:
    """pandas' ``Series.plot`` draws on the current axes when a figure is open (a kernel whose backend keeps
    figures, or one left by earlier code): that figure changed, so it comes back too, and stays the user's."""
    namespace: dict[str, object] = {"s": pd.Series([1.0, 3.0, 2.0], index=["a", "b", "c"])}
    figure, _ = plt.subplots(figsize=(4, 3), dpi=50)
    untouched, _ = plt.subplots(figsize=(4, 3), dpi=50)
    try:
        plt.figure(figure.number)  # the current figure, as the user left it
        async with tool_session(workspace, namespace) as session:
            error, text, images = await session.call("run_code", code="ax = s.plot.bar(rot=0)")
            assert not error, text
            assert len(images) == 1 and base64.b64decode(images[0]).startswith(PNG)
            error, text, images = await session.call("run_code", code="x = 1")
            assert not error and images == []  # nothing drawn: no figure sent
        assert plt.fignum_exists(figure.number) and plt.fignum_exists(untouched.number)
        assert plt.gcf() is figure  # still the current one
    finally:
        plt.close(figure)
        plt.close(untouched)
