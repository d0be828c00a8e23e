"""Registers the ``e2e`` label (a label only: the browser test always runs, in CI too)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "e2e: drives a real JupyterLab in a real browser (never skipped)")
