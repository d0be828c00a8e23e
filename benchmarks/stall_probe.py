"""Where the kernel's event loop stalls: a watchdog thread samples the loop thread's stack while a
heartbeat callback is late by more than ``THRESHOLD`` seconds. Loaded into a kernel by
``kernel_latency.py --stalls`` (``exec`` of this file); :func:`report` gives the stacks seen most, by
the time they were seen stalled, innermost frames first, and the garbage collector's passes (how many
and how long, by generation). ``SILO_BENCH_SWITCH=0.001`` in the benchmark's
environment also sets the kernel's GIL switch interval for the whole run (the experiment that showed
where the ``1+1`` wait went).
"""

from __future__ import annotations

import asyncio
import collections
import gc
import os
import sys
import threading
import time
import traceback

THRESHOLD = 0.02
BEAT = 0.002
SAMPLE = 0.003


class StallProbe:
    def __init__(self) -> None:
        self.loop = asyncio.get_event_loop()
        self.thread_id = threading.get_ident()
        self.last = time.perf_counter()
        self.stacks: collections.Counter[str] = collections.Counter()
        self.stalls: list[float] = []
        self.collections: dict[int, list[float]] = collections.defaultdict(list)  # generation: seconds
        self._collecting = 0.0
        gc.callbacks.append(self._collected)
        self.loop.call_soon(self._beat)
        threading.Thread(target=self._watch, daemon=True).start()

    def _collected(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._collecting = time.perf_counter()
        else:
            self.collections[info["generation"]].append(time.perf_counter() - self._collecting)

    def _beat(self) -> None:
        self.last = time.perf_counter()
        self.loop.call_later(BEAT, self._beat)

    def _watch(self) -> None:
        stalled_since: float | None = None
        while True:  # a daemon thread: it ends with the kernel
            time.sleep(SAMPLE)
            now, last = time.perf_counter(), self.last
            if now - last > THRESHOLD:
                frame = sys._current_frames().get(self.thread_id)
                if frame is not None:
                    summary = traceback.extract_stack(frame)
                    frames = [f"{f.filename.rsplit('/', 2)[-1]}:{f.lineno} {f.name}" for f in summary]
                    self.stacks[" < ".join(reversed(frames[-12:]))] += 1
                stalled_since = last
            elif stalled_since is not None:
                self.stalls.append(self.last - stalled_since)
                stalled_since = None

    def report(self, top: int = 12) -> str:
        lines = [
            f"stalls > {THRESHOLD * 1000:.0f} ms: {len(self.stalls)}; longest "
            + ", ".join(f"{s * 1000:.0f}" for s in sorted(self.stalls, reverse=True)[:10])
        ]
        for generation, took in sorted(self.collections.items()):
            lines.append(
                f"gc generation {generation}: {len(took)} collections, {sum(took) * 1000:.0f} ms in all, "
                f"longest {max(took) * 1000:.1f} ms"
            )
        for stack, count in self.stacks.most_common(top):
            lines.append(f"{count * SAMPLE * 1000:6.0f} ms  {stack}")
        return "\n".join(lines)

    def reset(self) -> None:
        self.stacks.clear()
        self.stalls.clear()
        self.collections.clear()


_stall_probe = StallProbe()
if os.environ.get("SILO_BENCH_SWITCH"):
    sys.setswitchinterval(float(os.environ["SILO_BENCH_SWITCH"]))
