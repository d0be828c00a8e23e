"""A spawn cancelled at any point (the user interrupts a connecting cell, a connect times out while the
supervisor starts) leaves nothing behind: no agent process, no lifeline socket or subprocess transport
left for the garbage collector (which only tells with a ``ResourceWarning``, whenever it gets there).

Real processes: the agent is ``sleep`` with a marker argument, run under the real supervisor. The
cancellation point is swept across the whole spawn (every delay from 0 to past its end).
"""

from __future__ import annotations

import gc
import os
import shutil
import time
import warnings
from pathlib import Path

import anyio

from silo_nb.acp import AgentProcess
from silo_nb.acp.client import background_closes


def agents_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in argv and state != "Z":
            found.append(int(entry.name))
    return found


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_a_spawn_cancelled_anywhere_leaves_no_process_socket_or_transport() -> None:
    sleep = shutil.which("sleep")
    assert sleep is not None
    marker = f"{os.getpid()}.{time.monotonic_ns() % 10**6}"
    await background_closes()  # an earlier test's connection still closing would move the count below
    gc.collect()
    fds = open_fds()
    cancelled = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        for step in range(16):
            with anyio.move_on_after(step * 0.004) as scope:
                process = await AgentProcess.spawn(sleep, [marker])
            if scope.cancelled_caught:
                cancelled += 1
            else:
                await process.terminate()
        gc.collect()
        with anyio.fail_after(10):
            while agents_with(marker):  # the supervisor's sweep may take its grace
                await anyio.sleep(0.05)
        gc.collect()
    assert cancelled >= 3  # the sweep did cancel spawns part-way
    leaks = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert leaks == []
    with anyio.move_on_after(5):  # what the sweep closes last (bounded): then nothing may be left open
        while open_fds() > fds:
            await anyio.sleep(0.05)
    assert open_fds() <= fds
