"""``python -m silo_nb demo``: a whole turn in a terminal; Ctrl-C is a deliberate stop, not a traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_ctrl_c_stops_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "SILO_NB_DATA_DIR": str(tmp_path / "data"),
        "SILO_NB_DEMO_STATE_DIR": str(tmp_path / "state"),
        "SILO_NB_DEMO_DELAY": "0.2",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "silo_nb", "demo", "slow: count to forty"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    first = process.stdout.readline()  # the turn has started
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert first and process.returncode == 130, (first, out, err)
    assert "stopped (Ctrl-C)" in err and "Traceback" not in err
