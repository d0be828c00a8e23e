"""Run in a child process by ``test_no_user_code.py`` (``python -m tests.kernel_tools.stubborn_code CASE``):
one kernel tool on a value or code that swallows the time bound (``except BaseException``), then what the
kernel looks like afterwards, printed as one JSON line. A child, so that a bound that does not hold hangs
the child, which the test's hang guard kills, and not the test run."""

from __future__ import annotations

import json
import signal
import sys
import time
from typing import Any

from silo_nb.kernel_tools import KernelNamespace
from silo_nb.kernel_tools.tools import KernelTools

BOUND = 1.0  # the reading tools' bound and run_code's, in this child


class Counter:
    swallowed = 0  # how many times the stubborn code caught the exception that was to stop it


class SwallowingRepr:
    """The issue's value: a ``__repr__`` that catches ``BaseException`` (the bound's own) and goes on."""

    def __repr__(self) -> str:
        while True:
            try:
                time.sleep(0.05)
            except BaseException:
                Counter.swallowed += 1


class TightSwallowingRepr:
    """No sleep to be interrupted in: a busy loop inside the ``try``, where the stop lands."""

    def __repr__(self) -> str:
        n = 0
        while True:
            try:
                while True:
                    n += 1
            except BaseException:
                Counter.swallowed += 1


def _swallow_forever() -> None:
    while True:
        try:
            time.sleep(0.05)
        except BaseException:
            Counter.swallowed += 1


class NestedSwallowingRepr:
    """Swallows, and its handler calls code that swallows too: two levels to get out of."""

    def __repr__(self) -> str:
        while True:
            try:
                _swallow_forever()
            except BaseException:
                Counter.swallowed += 1
                _swallow_forever()


SWALLOWING_CODE = """
while True:
    try:
        while True:
            n += 1
    except BaseException:
        swallowed += 1
"""

POLITE_CODE = """
import time
try:
    time.sleep(60)
finally:
    cleaned = True
"""


def main(case: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {
        "swallowing": SwallowingRepr(),
        "tight": TightSwallowingRepr(),
        "nested": NestedSwallowingRepr(),
        "x": 42,
        "n": 0,
        "swallowed": 0,
    }
    tools = KernelTools(KernelNamespace(namespace), run_code_timeout=BOUND, tool_seconds=BOUND)
    before = signal.getsignal(signal.SIGALRM)
    if case == "swallowing-code":
        outcome = tools.run({"code": SWALLOWING_CODE})
        swallowed = namespace["swallowed"]
    elif case == "polite-code":
        outcome = tools.run({"code": POLITE_CODE})
        swallowed = 0
    else:
        outcome = tools.read("inspect_variable", {"name": case})
        swallowed = Counter.swallowed
    after = tools.read("inspect_variable", {"name": "x"})
    return {
        "status": outcome.status,
        "text": outcome.text,
        "swallowed": swallowed,
        "cleaned": namespace.get("cleaned", False),
        "after": [after.status, after.text],
        "alarm_handler_back": signal.getsignal(signal.SIGALRM) == before,
        "timer": list(signal.getitimer(signal.ITIMER_REAL)),
        "trace": repr(sys.gettrace()),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])), flush=True)
