"""The notebook channel end to end: a real Jupyter server with real-time collaboration and silo_nb's
extension (enabled by the package's ``jupyter_server_config.d`` file), a kernel it started for a notebook,
and code in that kernel changing the notebook through the channel — the server saves the change.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from jupyter_client import BlockingKernelClient

from tests.support.lab import lab_server
from tests.support.server_kernel import kernel_for, run

NOTEBOOK = "analysis.ipynb"


def read_saved(path: Path, timeout: float = 10) -> nbformat.NotebookNode:
    """The notebook file, read whole: the server writes it in place, so a read can meet it half-written."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return nbformat.read(path, as_version=4)
        except (ValueError, nbformat.reader.NotJSONError):  # a save in progress
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def saved_sources(path: Path, want: int, timeout: float = 20) -> list[str]:
    """The file's cell sources once it has ``want`` cells (the server saves a second or so after a change)."""
    deadline = time.monotonic() + timeout
    while True:
        nb = read_saved(path)
        if len(nb.cells) == want or time.monotonic() > deadline:
            return [cell.source for cell in nb.cells]
        time.sleep(0.2)


@contextlib.contextmanager
def notebook_kernel(folder: Path, tmp_path: Path) -> Iterator[BlockingKernelClient]:
    """A kernel that a server with collaboration started for the notebook (the server up meanwhile)."""
    state = tmp_path / "state"
    with lab_server(folder, state, {}, collaboration=True) as server:
        client = kernel_for(server, state, NOTEBOOK)
        try:
            yield client
        finally:
            client.stop_channels()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_markdown_cell("# Notes")]
    nbformat.write(nb, root / NOTEBOOK)
    return root


def test_code_in_the_kernel_changes_its_notebook_and_the_server_saves_it(
    folder: Path, tmp_path: Path
) -> None:
    with notebook_kernel(folder, tmp_path) as client:
        said = run(
            client,
            """
        from silo_nb.server import NotebookChannel
        channel = NotebookChannel.from_environment()
        cells = (await channel.request("read"))["cells"]
        first = cells[0]["id"]
        added = await channel.request("insert", source="print('from the agent')", after=first)
        await channel.request("edit", cell_id=first, old="x = 1", new="x = 2")
        print(added["cellId"], len(cells), channel.notebook)
        """,
        )
        sources = saved_sources(folder / NOTEBOOK, 3)  # the server saves a second or so after the change
    cell_id, count, notebook = said.split()
    assert count == "2" and notebook.endswith(NOTEBOOK)
    assert sources == ["x = 2", "print('from the agent')", "# Notes"]
    assert [cell.id for cell in read_saved(folder / NOTEBOOK).cells][1] == cell_id


def test_a_bad_request_is_one_line_and_a_wrong_token_is_refused(folder: Path, tmp_path: Path) -> None:
    with notebook_kernel(folder, tmp_path) as client:
        said = run(
            client,
            """
        from silo_nb.server import NotebookChannel, NotebookUnavailable
        channel = NotebookChannel.from_environment()
        for op, fields in [("edit", {"cell_id": "nope", "old": "a", "new": "b"}), ("explode", {})]:
            try:
                await channel.request(op, **fields)
            except NotebookUnavailable as exc:
                print("said:", exc)
        stranger = NotebookChannel(channel.socket_path, "not-the-token", channel.notebook)
        try:
            await stranger.request("read")
        except NotebookUnavailable as exc:
            print("said:", exc)
        """,
        )
    lines = said.strip().splitlines()
    assert lines[0].startswith("said: No cell has the id 'nope'")
    assert lines[1].startswith("said: Unknown operation 'explode'")
    assert lines[2].startswith("said: refused")
    assert read_saved(folder / NOTEBOOK).cells[0].source == "x = 1"


def test_without_collaboration_every_request_says_why(folder: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    # The YDoc extension itself off: the server has no shared models at all.
    config = state / "config"
    config.mkdir(parents=True)
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"jupyter_server_ydoc": False}}})
    )
    with lab_server(folder, state, {}, collaboration=True) as server:
        client = kernel_for(server, state, NOTEBOOK)
        try:
            said = run(
                client,
                """
                from silo_nb.server import NotebookChannel, NotebookUnavailable
                try:
                    await NotebookChannel.from_environment().request("insert", source="x")
                except NotebookUnavailable as exc:
                    print(exc)
                """,
            )
        finally:
            client.stop_channels()
    assert "no real-time collaboration" in said and said.count("\n") == 1
    assert len(read_saved(folder / NOTEBOOK).cells) == 2


def test_the_demo_agent_adds_a_cell_below_its_prompt_and_runs_it_there(folder: Path, tmp_path: Path) -> None:
    """The whole chain: %%prompt in a kernel the server started → the demo agent → the kernel's notebook
    MCP server → Apply (a policy naming cells) → the server's shared notebook → Run it (naming code) → the
    outputs written into the new cell → the server saves it all."""
    state = tmp_path / "state"
    env = {"SILO_NB_DATA_DIR": str(tmp_path / "data"), "SILO_NB_DEMO_DELAY": "0"}
    with lab_server(folder, state, env, collaboration=True) as server:
        client = kernel_for(server, state, NOTEBOOK)
        first = read_saved(folder / NOTEBOOK).cells[0].id
        try:
            run(client, "%load_ext silo_nb")
            run(client, "%silo connect demo")
            run(
                client,
                """
                import pandas as pd, silo_nb
                penguins = pd.DataFrame({"species": ["Adelie", "Gentoo", "Adelie"], "mass": [3750, 4500, 38]})
                allow = demo.on_permission(silo_nb.PermissionPolicy("allow cells", "allow code"))
                """,
            )
            run(client, "%%prompt demo\nadd a cell that plots penguins", cell_id=first)
            said = run(client, "print(demo.journal_lines()[-1][:20])")
            saved = read_saved(folder / NOTEBOOK)
            deadline = time.monotonic() + 20
            while (
                not (len(saved.cells) == 3 and saved.cells[1].get("outputs")) and time.monotonic() < deadline
            ):
                time.sleep(0.2)
                saved = read_saved(folder / NOTEBOOK)
            # ... and the turn's cell changes taken back: the notebook as it was, saved.
            undone = run(client, "%silo undo-cells demo")
            back = saved_sources(folder / NOTEBOOK, 2)
        finally:
            client.stop_channels()
    assert undone.strip() == f"cell {saved.cells[1].id}: restored (the inserted cell removed)"
    assert back == ["x = 1", "# Notes"]
    added = saved.cells[1]
    assert [c.cell_type for c in saved.cells] == ["code", "code", "markdown"], said
    assert "groupby('species')['mass']" in added.source
    kinds = [o.output_type for o in added.outputs]
    assert "display_data" in kinds and any("image/png" in o.get("data", {}) for o in added.outputs), kinds
    assert added.execution_count is not None


def test_skip_leaves_the_notebook_as_it_was(folder: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = {"SILO_NB_DATA_DIR": str(tmp_path / "data"), "SILO_NB_DEMO_DELAY": "0"}
    with lab_server(folder, state, env, collaboration=True) as server:
        client = kernel_for(server, state, NOTEBOOK)
        try:
            run(client, "%load_ext silo_nb")
            run(client, "%silo connect demo")
            run(client, "import silo_nb\nskip = demo.on_permission(silo_nb.PermissionPolicy('reject cells'))")
            run(client, "%%prompt demo\nadd a cell")
        finally:
            client.stop_channels()
        time.sleep(2)  # past the server's save delay: a change would be on disk by now
    assert [c.source for c in read_saved(folder / NOTEBOOK).cells] == ["x = 1", "# Notes"]


def test_two_kernels_on_one_notebook_both_land_and_a_deleted_notebook_is_one_line(
    folder: Path, tmp_path: Path
) -> None:
    """Two kernels editing one notebook (the shared model merges them); a notebook deleted under the
    kernel (closed and gone mid-turn) is one line, and the kernel goes on."""
    state = tmp_path / "state"
    with lab_server(folder, state, {}, collaboration=True) as server:
        first = kernel_for(server, state, NOTEBOOK)
        second = kernel_for(server, state, None)  # a second kernel (a console's), pointed at it by hand
        insert = """
            import os
            os.environ.setdefault("JPY_SESSION_NAME", {path!r})
            from silo_nb.server import NotebookChannel
            print((await NotebookChannel.from_environment().request("insert", source={source!r}))["cellId"])
        """
        try:
            run(first, insert.format(path=NOTEBOOK, source="from_first = 1"))
            run(second, insert.format(path=NOTEBOOK, source="from_second = 2"))
            sources = saved_sources(folder / NOTEBOOK, 4)
            (folder / NOTEBOOK).unlink()
            gone = run(
                first,
                """
                from silo_nb.server import NotebookUnavailable
                try:
                    await NotebookChannel.from_environment().request("insert", source="after_delete = 1")
                except NotebookUnavailable as exc:
                    print("said:", exc)
                print(1 + 1)
                """,
            )
        finally:
            first.stop_channels()
            second.stop_channels()
    assert sources == ["x = 1", "# Notes", "from_first = 1", "from_second = 2"]
    said, still = gone.strip().splitlines()
    assert said == f"said: {NOTEBOOK} is gone (deleted or renamed): nothing was changed." and still == "2"
