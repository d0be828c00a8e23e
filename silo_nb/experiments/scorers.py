"""Scorers: what says whether a grid cell succeeded. Each gets a ``GridRun`` and gives a score.

- A scorer is any callable ``scorer(run) -> value`` (or an ``async def``), value a number, a bool, or a
  dict of them (``{"passed": 3, "failed": 1}`` → columns ``score.NAME.passed`` …). The grid's column is
  ``score.NAME`` for ``scorers={"NAME": scorer}``.
- :func:`command_scorer` runs a command in the working copy: no shell, its own process group, a timeout
  (the whole group is killed), exit code 0 → ``True``. Its output (stdout and stderr together) is kept,
  bounded: the first and last :data:`OUTPUT_KEEP` bytes, with the count of what was left out, so a test
  suite that prints a gigabyte costs a pipe's worth of memory.
- :func:`score_run` runs a cell's scorers one after the other. A scorer that raises, returns something
  else, or takes longer than its timeout gives no value (NaN in the DataFrame) and an entry in
  ``score_error``; the cell and its row are kept, and the next scorer runs. Nothing a scorer does reaches
  the caller: not ``SystemExit``, not ``KeyboardInterrupt`` (only a cancellation of the grid itself).
- A plain function runs in a thread of its own, so a slow one never blocks the kernel's loop; one that
  hangs is abandoned at its timeout (Python cannot stop a thread: it keeps its thread, a daemon one that
  never holds up the interpreter's exit, until it returns; give anything that may hang to
  ``command_scorer``, whose process is killed). An ``async def`` runs on the loop and is cancelled at
  its timeout.
"""

from __future__ import annotations

import _thread
import asyncio
import contextlib
import inspect
import math
import numbers
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from silo_nb.experiments.grid_run import GridRun

__all__ = [
    "OUTPUT_KEEP",
    "CommandOutcome",
    "CommandScorer",
    "ScoreSheet",
    "check_scorers",
    "command_scorer",
    "score_run",
]

OUTPUT_KEEP = 32 * 1024  # bytes kept from each end of a command's output
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")


@dataclass(frozen=True)
class CommandOutcome:
    """What a command scorer's command did."""

    argv: tuple[str, ...]
    exit_code: int | None
    output: str
    output_bytes: int
    seconds: float
    timed_out: bool = False
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.error is None

    def record(self) -> dict[str, Any]:
        return {
            "argv": list(self.argv),
            "exit_code": self.exit_code,
            "output": self.output,
            "output_bytes": self.output_bytes,
            "output_cut": self.output_bytes > 2 * OUTPUT_KEEP,
            "seconds": round(self.seconds, 3),
            "timed_out": self.timed_out,
            "error": self.error,
        }


class _Tail:
    """The first and last ``keep`` bytes of a stream, and how many there were."""

    def __init__(self, keep: int) -> None:
        self.keep, self.head, self.tail, self.total = keep, bytearray(), bytearray(), 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.keep - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            del self.tail[: max(0, len(self.tail) - self.keep)]

    def text(self) -> str:
        left_out = self.total - len(self.head) - len(self.tail)
        middle = f"\n… {left_out:,} bytes of output left out …\n".encode() if left_out else b""
        return bytes(self.head + middle + self.tail).decode("utf-8", errors="replace")


class CommandScorer:
    """A command run in the working copy; made by :func:`command_scorer` (see it)."""

    def __init__(
        self,
        argv: Sequence[str] | Callable[[GridRun], Sequence[str]],
        *,
        timeout: float = 60.0,
        env: Mapping[str, str] | None = None,
    ) -> None:
        if not callable(argv):
            argv = _check_argv(argv)
        if not isinstance(timeout, int | float) or timeout <= 0:
            raise ValueError(f"timeout={timeout!r} — give the seconds the command may take (more than 0).")
        self.argv = argv
        self.timeout = float(timeout)
        self.env = dict(env or {})

    def __repr__(self) -> str:
        shown = "<function>" if callable(self.argv) else " ".join(self.argv)
        return f"command_scorer({shown!r}, timeout={self.timeout:g})"

    async def __call__(self, run: GridRun) -> bool:
        outcome = await self.run(run)
        if outcome.timed_out:
            raise TimeoutError(f"timed out after {self.timeout:g} s")
        if outcome.error is not None:
            raise RuntimeError(outcome.error)
        return outcome.passed

    async def run(self, run: GridRun) -> CommandOutcome:
        """Run the command in ``run.workdir`` and say what it did (never raises for the command's sake)."""
        argv = _check_argv(self.argv(run) if callable(self.argv) else self.argv)
        start = time.monotonic()
        executable = shutil.which(argv[0], path=os.environ.get("PATH")) if os.sep not in argv[0] else argv[0]
        if executable is None:
            error = f"command not found: {argv[0]!r} — give its full path or put it on the PATH"
            return CommandOutcome(argv, None, "", 0, 0.0, error=error)
        env = {
            **os.environ,
            **self.env,
            "SILO_GRID_CELL": run.cell,
            "SILO_GRID_PROMPT_INDEX": str(run.prompt_index),
            "SILO_GRID_REPEAT": str(run.repeat),
            "SILO_GRID_JOURNAL": str(run.journal),
        }
        kept = _Tail(OUTPUT_KEEP)
        try:
            process = await anyio.open_process(
                [executable, *argv[1:]],
                cwd=run.workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            return CommandOutcome(argv, None, "", 0, 0.0, error=f"{argv[0]} could not start: {exc}")
        timed_out = False
        try:
            with anyio.move_on_after(self.timeout) as scope:
                if process.stdout is not None:
                    async for chunk in process.stdout:
                        kept.add(chunk)
                await process.wait()
            timed_out = scope.cancelled_caught
        finally:
            if process.returncode is None:
                _kill_group(process.pid)
            with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                await process.aclose()
        code = None if timed_out else process.returncode
        return CommandOutcome(argv, code, kept.text(), kept.total, time.monotonic() - start, timed_out)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _check_argv(argv: Any) -> tuple[str, ...]:
    if isinstance(argv, str) or not isinstance(argv, Sequence) or not argv:
        raise ValueError(
            f"command_scorer takes the command as a list, e.g. ['pytest', '-q'] (no shell) — not {argv!r}."
        )
    if not all(isinstance(part, str | os.PathLike) for part in argv):
        raise ValueError(f"Each part of the command is a string — got {argv!r}.")
    return tuple(os.fspath(part) for part in argv)


def command_scorer(
    argv: Sequence[str] | Callable[[GridRun], Sequence[str]],
    *,
    timeout: float = 60.0,
    env: Mapping[str, str] | None = None,
) -> CommandScorer:
    """A scorer that runs ``argv`` in the cell's working copy: exit code 0 → True, anything else → False.

    ``argv`` is a list (no shell), or a function of the ``GridRun`` giving one (e.g. a test per prompt:
    ``lambda run: ["pytest", "-q", TESTS[run.prompt_index]]``). The command also gets
    ``SILO_GRID_CELL``, ``SILO_GRID_PROMPT_INDEX``, ``SILO_GRID_REPEAT`` and ``SILO_GRID_JOURNAL`` in its
    environment (plus ``env``). Past ``timeout`` seconds its whole process group is killed and the score
    is NaN with "timed out" in ``score_error``. Its output is kept (bounded) in the run's folder.
    """
    return CommandScorer(argv, timeout=timeout, env=env)


def check_scorers(scorers: Mapping[str, Any] | None) -> dict[str, Any]:
    """The scorers as a plain dict, names checked (they become column names)."""
    if scorers is None:
        return {}
    if not isinstance(scorers, Mapping):
        raise TypeError(
            "scorers= takes a dict of name → scorer, e.g. {'tests': silo_nb.command_scorer(['pytest'])}."
        )
    for name, scorer in scorers.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ValueError(f"Scorer name {name!r} — use letters, digits, '_' and '-' (it names a column).")
        if not callable(scorer):
            raise TypeError(f"Scorer {name!r} is {type(scorer).__name__}, not a function of the run.")
    return dict(scorers)


@dataclass
class ScoreSheet:
    """One cell's scores: values by column name (``tests``, ``x.passed``), errors and command outputs."""

    values: dict[str, bool | float | None] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        return {"values": self.values, "errors": self.errors, "outputs": self.outputs}


async def score_run(scorers: Mapping[str, Any], run: GridRun, *, timeout: float) -> ScoreSheet:
    """Every scorer on ``run``, one after the other (see the module docstring)."""
    sheet = ScoreSheet()
    cancelled = anyio.get_cancelled_exc_class()
    for name, scorer in scorers.items():
        try:
            if isinstance(scorer, CommandScorer):
                outcome = await scorer.run(run)
                sheet.outputs[name] = outcome.record()
                if outcome.timed_out or outcome.error is not None:
                    sheet.values[name] = None
                    sheet.errors[name] = outcome.error or f"timed out after {scorer.timeout:g} s"
                    continue
                value: Any = outcome.passed
            else:
                value = await _call(scorer, run, timeout)
            sheet.values.update(_flatten(name, value))
        except cancelled:
            raise
        except TimeoutError:
            sheet.values[name] = None
            sheet.errors[name] = f"timed out after {timeout:g} s"
        except BaseException as exc:  # a scorer's failure is its score's, never the run's
            sheet.values[name] = None
            sheet.errors[name] = _one_line(exc)
    return sheet


async def _call(scorer: Callable[[GridRun], Any], run: GridRun, timeout: float) -> Any:
    with anyio.fail_after(timeout):
        if inspect.iscoroutinefunction(scorer) or inspect.iscoroutinefunction(
            getattr(scorer, "__call__", None)  # noqa: B004  (an object whose __call__ is async)
        ):
            value = await scorer(run)
        else:
            value = await _in_daemon_thread(scorer, run)
        if inspect.isawaitable(value):
            value = await value
    return value


async def _in_daemon_thread(function: Callable[[GridRun], Any], run: GridRun) -> Any:
    """``function(run)`` in a thread of its own, awaited here; abandoned if this wait is cancelled.

    A daemon thread (``_thread``, not ``threading``): a scorer that never returns must not keep the
    interpreter from exiting (Python joins ``threading``'s and ``concurrent.futures``' threads at exit,
    anyio's too). Nothing of silo_nb's own I/O runs in a thread; only the user's plain function does.
    """
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[Any] = loop.create_future()

    def settle(value: Any, failed: bool) -> None:
        if answer.done():
            return
        if failed:
            answer.set_exception(value)
        else:
            answer.set_result(value)

    def work() -> None:
        try:
            value: Any = function(run)
        except BaseException as exc:  # handed to the awaiting task, which decides
            outcome: tuple[Any, bool] = (exc, True)
        else:
            outcome = (value, False)
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting any more
            loop.call_soon_threadsafe(settle, *outcome)

    _thread.start_new_thread(work, ())
    return await answer


def _flatten(name: str, value: Any) -> dict[str, bool | float | None]:
    if isinstance(value, Mapping):
        if not value:
            raise ValueError("returned an empty dict — give at least one score")
        return {f"{name}.{key}": _scalar(item) for key, item in value.items()}
    return {name: _scalar(value)}


def _scalar(value: Any) -> bool | float | None:
    if isinstance(value, bool) or type(value).__name__ == "bool_":  # numpy's bool too
        return bool(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        return None if math.isnan(number) else number
    shown = type(value).__name__
    raise TypeError(f"returned {shown} — a scorer returns a number, a bool or a dict of them")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())[:500]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
