"""``bash .ci/demo NOTEBOOK``: extras installed on demand and not again, what a real-agents notebook lacks
in one line, and a failed cell as one readable line.

- The script's install step runs against a stand-in ``.venv/bin/python`` that logs each call and runs the
  real interpreter for everything but pip (so no network): the first call for a notebook installs the
  extras its metadata names, a second finds the stamp and calls no pip, a notebook needing one more extra
  installs again, and a changed ``pyproject.toml`` does too.
- ``python -m silo_nb run`` on the real-agents notebook with no profile, no key, or no agent
  program; and on a notebook whose cell fails (in a real kernel).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from silo_nb.cli.demo_notebook import main

ROOT = Path(__file__).resolve().parents[2]

FAKE_PYTHON = """#!/usr/bin/env bash
echo "$*" >> "{log}"
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then exit 0; fi
if [ "$1" = "-m" ]; then exit 0; fi   # silo_nb.cli.demo_notebook: not what this test is about
exec "{python}" "$@"
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A copy of what ``.ci/demo`` reads (itself, pyproject.toml, the notebooks) with a stand-in venv."""
    root = tmp_path / "checkout"
    (root / ".ci").mkdir(parents=True)
    shutil.copy(ROOT / ".ci" / "demo", root / ".ci" / "demo")
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    shutil.copytree(ROOT / "notebooks", root / "notebooks")
    python = root / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(FAKE_PYTHON.format(log=root / "calls.log", python=sys.executable))
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    return root


def demo(root: Path, *args: str) -> list[str]:
    """Run ``.ci/demo``; the pip calls it made."""
    log = root / "calls.log"
    log.unlink(missing_ok=True)
    done = subprocess.run(
        ["bash", ".ci/demo", *args], cwd=root, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return [line for line in log.read_text().splitlines() if line.startswith("-m pip")]


def test_extras_are_installed_on_demand_and_an_up_to_date_venv_is_reused_without_pip(checkout: Path) -> None:
    first = demo(checkout, "notebooks/01-quickstart.ipynb")
    assert len(first) == 1 and first[0].endswith("-e .[demo]"), first
    assert demo(checkout, "notebooks/01-quickstart.ipynb") == []  # the stamp: nothing changed
    assert demo(checkout) == []  # the default notebook is the quickstart
    more = demo(checkout, "--out", "build/x", "notebooks/05-experiments.ipynb", "--once")
    assert len(more) == 1 and more[0].endswith("-e .[demo,frame,view]"), more  # its metadata: frame, view
    assert demo(checkout, "notebooks/02-data-science.ipynb") == []  # frame is there now
    assert demo(checkout, "notebooks/01-quickstart.ipynb") == []
    with (checkout / "pyproject.toml").open("a") as f:
        f.write("\n# a change\n")
    again = demo(checkout, "notebooks/01-quickstart.ipynb")
    assert len(again) == 1 and again[0].endswith("-e .[demo,frame,view]"), again  # what was there, again


def test_every_notebook_but_the_real_agents_one_names_the_extras_it_imports() -> None:
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = json.loads(path.read_text())
        code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
        extras = nb["metadata"].get("silo_nb", {}).get("extras", [])
        if "pandas" in code or "run_grid" in code or "silo_nb.frame" in code:
            assert "frame" in extras, path.name


def real_agents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, profile: str | None, **env: str
) -> list[str]:
    config = tmp_path / "config"
    if profile is not None:
        (config / "silo").mkdir(parents=True, exist_ok=True)
        (config / "silo" / "profiles.toml").write_text(profile)
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(config))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(config))
    monkeypatch.delenv("SILO_NB_PROFILES", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    out = io.StringIO()
    code = main([str(ROOT / "notebooks" / "04-real-agents.ipynb"), "--out", str(tmp_path / "out")], out=out)
    lines = out.getvalue().splitlines()
    assert len(lines) == 1, lines
    return [str(code), lines[0]]


def test_the_real_agents_notebook_says_what_is_missing_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, line = real_agents(tmp_path, monkeypatch, None)
    assert code == "0" and 'needs a "codex" profile with OPENAI_API_KEY' in line, line
    assert "profiles.example.toml" in line and "nothing is wrong with silo_nb" in line
    keyless = f'[[profiles]]\nid = "codex"\ncommand = "{sys.executable}"\n'
    code, line = real_agents(tmp_path, monkeypatch, keyless)
    assert code == "0" and 'needs OPENAI_API_KEY for "codex"' in line, line  # only the key: exit 0
    code, line = real_agents(tmp_path, monkeypatch, '[[profiles]]\nid = "codex"\ncommand = "no-such-agent"\n')
    assert code == "1" and line.startswith("error:") and "'no-such-agent'" in line, line  # a program: fails
    assert not (tmp_path / "out").exists()  # nothing was run


def test_a_failed_cell_is_one_line_naming_the_cell_without_colour_codes(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# a lesson"),
        nbformat.v4.new_code_cell("%load_ext silo_nb"),
        nbformat.v4.new_code_cell("import no_such_module_here  # needs an extra"),
        nbformat.v4.new_code_cell("print('never')"),
    ]
    nb.metadata["silo_nb"] = {"extras": ["frame"]}
    source = tmp_path / "lesson.ipynb"
    nbformat.write(nb, source)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "silo_nb", "run", str(source), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        check=False,
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 1 and len(lines) == 1, (done.stdout, done.stderr)
    assert lines[0].startswith("error: cell 3 (`import no_such_module_here  # needs an extra`): "), lines
    assert "ModuleNotFoundError: No module named 'no_such_module_here'" in lines[0]
    assert "frame extra" in lines[0] and "\x1b" not in done.stdout
