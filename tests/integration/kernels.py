"""The kernels the notebook tests run on: this venv's own ipykernel (7.4) and ipykernel 6.29.5, the oldest
silo_nb supports, from the second venv ``.venv-ipk6`` that ``.ci/setup`` makes.

- The 6.29.5 kernel is a kernelspec written into a temporary folder put first on ``JUPYTER_PATH`` for
  the session, so jupyter_client and nbclient find it by name; it runs ``.venv-ipk6``'s Python, where
  silo_nb is installed (editable) from this checkout.
- A missing ``.venv-ipk6`` fails the test in CI (``CI`` set) and skips it elsewhere, saying what to run.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IPYKERNEL6_VENV = ROOT / ".venv-ipk6"
IPYKERNEL6_VERSION = "6.29.5"
IPYKERNEL6_KERNEL = "silo-test-ipykernel6"
THIS_KERNEL = "python3"  # this venv's own (ipykernel 7.4)
KERNEL_PARAMS = [
    pytest.param(THIS_KERNEL, id="ipykernel7"),
    pytest.param(IPYKERNEL6_KERNEL, id="ipykernel6"),
]


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def ipykernel6_python() -> Path:
    """``.venv-ipk6``'s Python, checked to run ipykernel 6.29.5 and this checkout's silo_nb."""
    python = IPYKERNEL6_VENV / "bin" / "python"
    if not python.exists():
        message = f"no {IPYKERNEL6_VENV.name} (ipykernel {IPYKERNEL6_VERSION}): run `bash .ci/setup`"
        if _in_ci():
            pytest.fail(message)
        pytest.skip(message)
    probe = "import ipykernel, silo_nb; print(ipykernel.__version__); print(silo_nb.__file__)"
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    version, package = done.stdout.split()
    assert version == IPYKERNEL6_VERSION, (
        f"{IPYKERNEL6_VENV.name} has ipykernel {version}: run bash .ci/setup"
    )
    assert Path(package).resolve().is_relative_to(ROOT), f"{IPYKERNEL6_VENV.name} runs silo_nb from {package}"
    return python


def write_ipykernel6_spec(folder: Path) -> None:
    """The kernelspec of the 6.29.5 kernel, under ``folder`` as a ``JUPYTER_PATH`` entry."""
    spec = folder / "kernels" / IPYKERNEL6_KERNEL
    spec.mkdir(parents=True, exist_ok=True)
    argv = [str(ipykernel6_python()), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel = {"argv": argv, "display_name": f"ipykernel {IPYKERNEL6_VERSION}", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel))
