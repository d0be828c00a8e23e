"""A kernel killed without cleanup leaves its socket folder behind; the next kernel tool server of the same
user removes such folders (a socket nobody listens on, or no socket after a minute) and keeps a live one."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from silo_nb.kernel_tools.namespace import KernelNamespace
from silo_nb.kernel_tools.socket_server import KernelToolServer
from silo_nb.private_sockets import STALE_AFTER


def dead_socket_folder(runtime: Path) -> Path:
    folder = runtime / "silo-kt-dead"
    folder.mkdir(mode=0o700)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(folder / "s"))
    sock.close()  # the file stays, nobody listens: what a killed kernel leaves
    return folder


async def test_a_dead_kernels_folder_goes_and_a_live_ones_stays(runtime_dir: Path) -> None:
    runtime = runtime_dir
    dead = dead_socket_folder(runtime)
    empty_old = runtime / "silo-kt-old"
    empty_old.mkdir(mode=0o700)
    past = time.time() - STALE_AFTER - 5
    os.utime(empty_old, (past, past))
    empty_young = runtime / "silo-kt-young"  # another kernel's, between mkdtemp and bind
    empty_young.mkdir(mode=0o700)
    other = runtime / "not-ours"
    other.mkdir()
    live = await KernelToolServer(KernelNamespace({})).start()
    try:
        assert live.folder is not None and Path(live.folder).parent == runtime
        second = await KernelToolServer(KernelNamespace({})).start()
        await second.aclose()
        assert not dead.exists() and not empty_old.exists()
        assert empty_young.exists() and other.exists()
        assert Path(live.folder).exists()  # it answers the probe: a live kernel's folder is kept
        assert live.refused == 0  # the probe's connection is not a refused request
    finally:
        await live.aclose()
    assert not Path(live.folder).exists()


async def test_a_link_named_like_a_folder_is_never_followed(runtime_dir: Path, tmp_path: Path) -> None:
    runtime = runtime_dir
    target = tmp_path / "precious"
    target.mkdir()
    (target / "s").write_text("keep")
    (runtime / "silo-kt-link").symlink_to(target)
    server = await KernelToolServer(KernelNamespace({})).start()
    await server.aclose()
    assert (target / "s").read_text() == "keep"
