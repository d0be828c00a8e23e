"""Fixtures of the integration tests: the kernels the notebook tests run on (``kernels.py``: ipykernel 7.4
and 6.29.5), and the vendor agents' HOMEs, one per agent (and per sign-in case) for the whole run — empty
at first use, so each agent's first start pays its one-time unpack only once (copilot copies 245 MB into
``~/.cache``) — and removed at the end."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.kernels import IPYKERNEL6_KERNEL, KERNEL_PARAMS, write_ipykernel6_spec


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


@pytest.fixture(scope="session")
def ipykernel6(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The name of the ipykernel 6.29.5 kernelspec, findable for the whole session (``kernels.py``)."""
    folder = tmp_path_factory.mktemp("jupyter-path")
    write_ipykernel6_spec(folder)
    before = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = os.pathsep.join([str(folder), *([before] if before else [])])
    yield IPYKERNEL6_KERNEL
    if before is None:
        os.environ.pop("JUPYTER_PATH", None)
    else:
        os.environ["JUPYTER_PATH"] = before


@pytest.fixture(params=KERNEL_PARAMS)
def kernel_name(request: pytest.FixtureRequest) -> str:
    """Each kernel silo_nb supports in turn: this venv's ipykernel 7.4, then ipykernel 6.29.5."""
    if request.param == IPYKERNEL6_KERNEL:
        return str(request.getfixturevalue("ipykernel6"))
    return str(request.param)
