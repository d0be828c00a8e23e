"""Installing silo_nb as a user would: ``python -m silo_nb install`` (the kernelspec for this Python, a
starter profiles file written once), and the wheel in a fresh virtual environment with no checkout, its
kernel registered, running the quickstart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def jupyter_env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"),
        "PYTHONPATH": str(REPO),
    }


def test_install_registers_the_kernel_and_writes_starter_profiles_once(tmp_path: Path) -> None:
    env = jupyter_env(tmp_path)
    first = subprocess.run(
        [sys.executable, "-m", "silo_nb", "install"], env=env, capture_output=True, text=True, check=True
    )
    written = tmp_path / "jupyter-data" / "kernels" / "silo-python"
    spec = json.loads((written / "kernel.json").read_text())
    assert spec["argv"][0] == sys.executable and "--ext=silo_nb" in spec["argv"]
    assert f"kernelspec: Jupyter will use {written}" in first.stdout.splitlines()
    profiles = tmp_path / "jupyter-config" / "silo" / "profiles.toml"
    assert f"profiles: wrote {profiles}" in first.stdout and oct(profiles.stat().st_mode & 0o777) == "0o600"
    assert tomllib.loads(profiles.read_text()) == {}  # every example entry is commented out
    assert '# id = "codex"' in profiles.read_text()
    profiles.write_text('[[profiles]]\nid = "mine"\ncommand = "x"\n')
    again = subprocess.run(
        [sys.executable, "-m", "silo_nb", "install"], env=env, capture_output=True, text=True, check=True
    )
    assert "kept" in again.stdout and "mine" in profiles.read_text()  # never overwritten


def test_install_says_when_jupyter_would_start_another_kernelspec_of_that_name(tmp_path: Path) -> None:
    """Jupyter reads JUPYTER_PATH (and a venv's own share/jupyter) before the user's folder: a second
    ``silo-python`` there would be the one started, so the command names it and how to remove it."""
    env = jupyter_env(tmp_path)
    first_on_path = tmp_path / "site" / "kernels" / "silo-python"
    first_on_path.mkdir(parents=True)
    (first_on_path / "kernel.json").write_text(
        json.dumps({"argv": ["python"], "display_name": "old", "language": "python"})
    )
    env["JUPYTER_PATH"] = str(tmp_path / "site")
    done = subprocess.run(
        [sys.executable, "-m", "silo_nb", "install", "--no-profiles"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"kernelspec: Jupyter reads {first_on_path} first" in done.stdout
    assert "jupyter kernelspec remove -y silo-python" in done.stdout


def run(*command: str | Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in command], capture_output=True, text=True, check=True, **kwargs)  # type: ignore[call-overload]


def test_the_wheel_installs_into_a_fresh_venv_and_runs_the_quickstart(tmp_path: Path) -> None:
    run(sys.executable, "-m", "pip", "wheel", REPO, "--no-deps", "-q", "-w", tmp_path / "dist")
    (wheel,) = (tmp_path / "dist").glob("silo_nb-*.whl")
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    run(python, "-m", "pip", "install", "-q", "--disable-pip-version-check", f"{wheel}[demo]")
    away = tmp_path / "elsewhere"  # no checkout on the path: only the installed package
    away.mkdir()
    env = {k: v for k, v in jupyter_env(tmp_path).items() if k != "PYTHONPATH"}
    installed = run(python, "-c", "import silo_nb, sys; print(silo_nb.__file__)", cwd=away, env=env)
    assert str(venv) in installed.stdout
    kernels = venv / "share" / "jupyter" / "kernels"
    assert not (kernels / "silo-python").exists()  # the wheel ships none: the command writes the one
    done = run(python, "-m", "silo_nb", "install", "--sys-prefix", "--no-profiles", cwd=away, env=env)
    assert f"kernelspec: Jupyter will use {kernels / 'silo-python'}" in done.stdout
    spec = json.loads((venv / "share" / "jupyter" / "kernels" / "silo-python" / "kernel.json").read_text())
    assert spec["argv"][0] == str(python)
    assert (venv / "share" / "silo_nb" / "profiles.example.toml").is_file()
    notebook = away / "quickstart.ipynb"
    notebook.write_text((REPO / "notebooks" / "01-quickstart.ipynb").read_text())
    demo = run(
        python, "-m", "silo_nb", "run", notebook, "--out", away / "out", cwd=away, env=env, timeout=900
    )
    assert "Run 2 sent the agent nothing" in demo.stdout, demo.stdout[-2000:]
