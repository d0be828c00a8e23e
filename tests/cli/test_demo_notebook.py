"""`bash .ci/demo NOTEBOOK`'s closing hint names the notebook just run (issue 35, item 2)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import nbformat
import pytest

from silo_nb.cli import demo_notebook


def fake_execute(
    path: Path, env: Any, timeout: float = 300, kernel_name: str = ""
) -> demo_notebook.RunReport:
    return demo_notebook.RunReport(nbformat.v4.new_notebook(), 0.1, ["hi"], ["hi"])


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        ([], "bash .ci/demo --lab"),
        (["notebooks/03-teaching.ipynb"], "bash .ci/demo notebooks/03-teaching.ipynb --lab"),
        (["notebooks/my notes.ipynb"], "bash .ci/demo 'notebooks/my notes.ipynb' --lab"),
    ],
)
def test_the_closing_hint_opens_the_notebook_that_was_run(
    argv: list[str], hint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(tmp_path)
    notebook = Path(argv[0]) if argv else demo_notebook.DEFAULT_NOTEBOOK
    notebook.parent.mkdir(parents=True, exist_ok=True)
    notebook.write_bytes((root / "notebooks/03-teaching.ipynb").read_bytes())
    monkeypatch.setattr(demo_notebook, "execute", fake_execute)
    out = io.StringIO()
    assert demo_notebook.main([*argv, "--out", str(tmp_path / "out")], out=out) == 0
    assert out.getvalue().rstrip().splitlines()[-1] == f"Open it in JupyterLab: {hint}"
