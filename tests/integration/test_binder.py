"""The one-click teaching setup (issue 34): ``binder/`` builds, as repo2docker would, an environment in
which the teaching lesson runs on the "Python 3 (silo)" kernel with the demo agent and no key.

repo2docker copies the repository, installs ``binder/requirements.txt`` from its root with the
environment's pip, then runs ``binder/postBuild`` there with the environment's ``bin`` first on PATH. The
test does the same in a fresh virtual environment (the checkout's tracked files copied, nothing of this
one's on the path), then runs the lesson postBuild left behind headless in the kernelspec it registered.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BINDER = REPO / "binder"


def run(*command: str | Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in command], capture_output=True, text=True, check=True, **kwargs)  # type: ignore[call-overload]


def test_the_binder_files_are_what_repo2docker_reads() -> None:
    tracked = run("git", "ls-files", "-s", "binder/postBuild", cwd=REPO).stdout.split()
    assert tracked[0] == "100755", "commit binder/postBuild executable: git update-index --chmod=+x"
    assert os.access(BINDER / "postBuild", os.X_OK)
    runtime = (BINDER / "runtime.txt").read_text().strip()
    wanted = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    assert runtime.startswith("python-3.") and int(runtime.split(".")[1]) >= int(wanted.split(".")[1])
    text = (BINDER / "requirements.txt").read_text()
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert lines == [".[demo]"]  # the repository itself, from its root, with what runs a notebook headless


def copy_checkout(target: Path) -> None:
    """The tracked files, as a clone would have them (executable bits included)."""
    names = run("git", "ls-files", "-z", cwd=REPO).stdout.split("\0")
    for name in filter(None, names):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def test_postbuild_leaves_a_kernel_that_runs_the_lesson_with_no_key(tmp_path: Path) -> None:
    repo, venv = tmp_path / "repo", tmp_path / "venv"
    copy_checkout(repo)
    run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "JUPYTER", "SILO_NB_"))},
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(tmp_path / "home"),
        "JUPYTER_DATA_DIR": str(tmp_path / "home" / "jupyter-data"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "home" / "jupyter-config"),
        "VIRTUAL_ENV": str(venv),
    }
    run(python, "-m", "pip", "install", "-q", "-r", "binder/requirements.txt", cwd=repo, env=env, timeout=900)
    where = run(python, "-c", "import silo_nb; print(silo_nb.__file__)", cwd=tmp_path, env=env).stdout
    assert where.startswith(str(venv)), where  # the installed copy, not this checkout

    built = run(repo / "binder" / "postBuild", cwd=repo, env=env, timeout=300)
    spec = json.loads((venv / "share" / "jupyter" / "kernels" / "silo-python" / "kernel.json").read_text())
    assert spec["argv"][0] == str(python) and "--ext=silo_nb" in spec["argv"]
    assert not (tmp_path / "home" / "jupyter-config" / "silo").exists()  # no starter profiles: no keys
    lesson = repo / "lesson" / "03-teaching.ipynb"
    assert f"lesson: lesson/{lesson.name}" in built.stdout
    cells = json.loads(lesson.read_text())["cells"]
    assert all(c["outputs"] == [] for c in cells if c["cell_type"] == "code")  # a clean start
    assert (repo / "lesson" / "data" / "penguin-lesson.jsonl").is_file()
    assert (repo / "notebooks" / lesson.name).read_bytes() == (REPO / "notebooks" / lesson.name).read_bytes()

    out = tmp_path / "ran"
    demo = run(
        python,
        "-m",
        "silo_nb",
        "run",
        lesson,
        "--out",
        out,
        "--once",
        "--kernel",
        "silo-python",
        cwd=tmp_path,
        env=env,
        timeout=900,
    )
    assert "run 1: a new kernel" in demo.stdout, demo.stdout[-2000:]
    ran = json.loads((out / lesson.name).read_text())
    code = [c for c in ran["cells"] if c["cell_type"] == "code"]
    assert all(o.get("output_type") != "error" for c in code for o in c["outputs"])
    streams = [o["text"] for c in code for o in c["outputs"] if o.get("output_type") == "stream"]
    shown = "".join("".join(t) if isinstance(t, list) else t for t in streams)
    # The kernelspec loaded silo_nb before the lesson's own %load_ext did: the kernel is the one it made.
    assert "The silo_nb extension is already loaded" in shown
    for check in (
        "the allowed line is in notes.md: True",
        "the rejected line is in notes.md: False",
        "notes.md unchanged since step 3: True",
        "the replay wrote nothing: True",
    ):
        assert check in shown, shown[-2000:]
