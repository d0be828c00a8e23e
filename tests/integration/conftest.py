"""Fixtures of the integration tests: the vendor agents' HOMEs, one per agent (and per sign-in case) for
the whole run — empty at first use, so each agent's first start pays its one-time unpack only once
(copilot copies 245 MB into ``~/.cache``) — and removed at the end."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest


class VendorHomes(dict[str, Path]):
    """``homes[name]``: the HOME folder for ``name`` (made on first use)."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root

    def __missing__(self, name: str) -> Path:
        folder = self.root / name
        folder.mkdir(parents=True, exist_ok=True)
        self[name] = folder
        return folder


@pytest.fixture(scope="session")
def vendor_homes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VendorHomes]:
    homes = VendorHomes(tmp_path_factory.mktemp("vendor-homes"))
    yield homes
    shutil.rmtree(homes.root, ignore_errors=True)
