"""Fixtures of the kernel tools' tests."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def runtime_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``$XDG_RUNTIME_DIR``: a new 0700 folder with a short path, as a real one is (/run/user/UID): under
    a long tmp_path (pytest-xdist's) the socket would not fit in ``sun_path`` and the server rightly
    moves to /tmp."""
    folder = Path(tempfile.mkdtemp(prefix="rt-"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    yield folder
    if os.geteuid() == 0:
        os.chown(folder, 0, 0)  # a test may have given it away
    folder.chmod(0o700)
    shutil.rmtree(folder, ignore_errors=True)
