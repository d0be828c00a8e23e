"""``run_code``: Python run in the user's namespace like a cell, bounded, with what it printed and plotted.

- The shell's ``transform_cell`` (when lent) turns IPython syntax into Python first; then the code is
  compiled as a module whose last statement, if it is an expression, is evaluated for its value — the
  value a cell shows (its text from the shell's display formatter when lent, else a capped ``repr``).
- ``stdout`` and ``stderr`` are captured (each kept to :data:`~.limits.VALUE_CHARS`, the rest counted):
  nothing reaches the ``%%prompt`` cell's own output. A traceback leaves out this module's frame.
- Every matplotlib figure the code opened comes back rendered (``figures.py``), at most
  :data:`~.limits.MAX_FIGURES`, and is closed: the tool's card shows it.
- Bounded by ``timeout`` (``guard.bounded_call``: code that catches ``BaseException`` does not outlive it);
  the kernel's interrupt stops it (``interrupted``) without cancelling the turn. Top-level ``await`` is
  not supported (the code runs synchronously).
"""

from __future__ import annotations

import ast
import base64
import contextlib
import functools
import io
import linecache
import traceback
import uuid
from dataclasses import dataclass, field
from typing import Any

from silo_nb.kernel_tools import guard
from silo_nb.kernel_tools import plot_capture as figures
from silo_nb.kernel_tools.guard import ToolTimeout, bounded_call
from silo_nb.kernel_tools.limits import MAX_CODE_CHARS, MAX_FIGURES, TOOL_SECONDS, VALUE_CHARS
from silo_nb.kernel_tools.namespace import KernelNamespace
from silo_nb.kernel_tools.report_text import capped_repr, cut
from silo_nb.kernel_tools.variables import ToolInputError

__all__ = ["CodeResult", "run_code"]


class _CappedText(io.TextIOBase):
    """A text stream that keeps its first ``limit`` characters and counts the others."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.kept = 0
        self.dropped = 0
        self.limit = limit

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        room = self.limit - self.kept
        if room > 0:
            self.parts.append(text[:room])
            self.kept += min(len(text), room)
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def text(self) -> str:
        joined = "".join(self.parts)
        return joined + (f"… [{self.dropped:,} more characters]" if self.dropped else "")


@dataclass
class CodeResult:
    """How the code ran: ``status`` is ``completed``, ``error``, ``interrupted`` or ``timed_out``."""

    status: str
    stdout: str = ""
    stderr: str = ""
    value: str | None = None
    traceback: str | None = None
    images: list[bytes] = field(default_factory=list)  # PNGs for the agent
    previews: list[str] = field(default_factory=list)  # smaller base64 PNGs for the transcript
    figures_left_out: int = 0
    notes: list[str] = field(default_factory=list)

    def text(self) -> str:
        """What the agent reads (the images go beside it)."""
        parts = [f"status: {self.status}"]
        for title, body in (("stdout", self.stdout), ("stderr", self.stderr)):
            if body:
                parts.append(f"{title}:\n{body.rstrip()}")
        if self.value is not None:
            parts.append(f"value:\n{self.value}")
        if self.traceback:
            parts.append(f"traceback:\n{self.traceback}")
        if self.images:
            left = f" ({self.figures_left_out} more not sent)" if self.figures_left_out else ""
            parts.append(f"figures: {len(self.images)} PNG image(s) follow{left}")
        parts += self.notes
        return "\n\n".join(parts)


def _compile(source: str, filename: str) -> tuple[Any, Any]:
    """(the module minus a final expression, that expression or None), compiled."""
    tree = ast.parse(source, filename=filename, mode="exec")
    last = None
    final = tree.body[-1] if tree.body else None
    if isinstance(final, ast.Expr):
        tree.body.pop()
        last = ast.Expression(final.value)
    body = compile(tree, filename, "exec")
    return body, (compile(last, filename, "eval") if last is not None else None)


def _value_text(ns: KernelNamespace, value: Any, result: CodeResult) -> str:
    if ns.format_value is None:
        return capped_repr(value, VALUE_CHARS)
    data = ns.format_value(value)
    png = data.get("image/png")
    is_figure = str(getattr(type(value), "__module__", "")).startswith("matplotlib")
    if png is not None and not is_figure and len(result.images) < MAX_FIGURES:
        raw = png if isinstance(png, bytes) else base64.b64decode(str(png))
        result.images.append(raw)
        result.previews.append(base64.b64encode(raw).decode("ascii"))
    text = data.get("text/plain")
    return cut(str(text), VALUE_CHARS) if text is not None else capped_repr(value, VALUE_CHARS)


def _traceback(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    kept = [f for f in frames if f.filename not in (__file__, guard.__file__)]
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(kept)]
    lines += traceback.format_exception_only(type(exc), exc)
    return cut("".join(lines), VALUE_CHARS)


def run_code(ns: KernelNamespace, code: Any, *, timeout: float) -> CodeResult:
    """Run ``code`` (see the module docstring); ``ToolInputError`` when it is not a string or too long."""
    if not isinstance(code, str):
        raise ToolInputError("run_code needs the code as a string.")
    if len(code) > MAX_CODE_CHARS:
        raise ToolInputError(
            f"The code is {len(code):,} characters; run_code takes at most {MAX_CODE_CHARS:,}."
        )
    filename = f"<run_code {uuid.uuid4().hex[:8]}>"
    try:
        source = ns.transform(code) if ns.transform is not None else code
        body, last = _compile(source, filename)
    except SyntaxError as exc:
        return CodeResult("error", traceback=cut("".join(traceback.format_exception_only(exc)), VALUE_CHARS))
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    plt = figures.may_plot(code)
    before = figures.open_figures(plt)
    out, err = _CappedText(VALUE_CHARS), _CappedText(VALUE_CHARS)
    result = CodeResult("completed")

    def execute() -> None:
        exec(body, ns.user_ns)
        if last is not None:
            value = eval(last, ns.user_ns)
            if value is not None:
                result.value = _value_text(ns, value, result)

    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), figures.no_show(plt):
            bounded_call(timeout, execute, interruptible=True)
    except KeyboardInterrupt:
        result.status = "interrupted"
        result.notes.append("The user interrupted the kernel: the code stopped where it was.")
    except ToolTimeout:
        result.status = "timed_out"
        result.notes.append(f"The code ran longer than {timeout:g} s and was stopped where it was.")
    except BaseException as exc:  # the user's code may raise anything, SystemExit included
        result.status = "error"
        result.traceback = _traceback(exc)
    finally:
        linecache.cache.pop(filename, None)
    result.stdout, result.stderr = out.text(), err.text()
    _collect_figures(figures.pyplot(), before, result)
    return result


def _collect_figures(plt: Any, before: dict[int, Any], result: CodeResult) -> None:
    """The figures the code made (closed once rendered) or drew on (``Series.plot`` draws on the current
    axes of a figure that was open: rendered, and left open, the user's)."""
    if plt is None:
        return
    after = figures.open_figures(plt)
    changed = [number for number, shape in after.items() if before.get(number) != shape]
    current = plt.gcf().number if after else None
    for number in changed:
        figure = plt.figure(number)
        if len(result.images) < MAX_FIGURES:
            try:
                rendered = bounded_call(TOOL_SECONDS, functools.partial(figures.render, figure))
            except (Exception, ToolTimeout) as exc:
                result.notes.append(f"figure {number} could not be rendered: {type(exc).__name__}: {exc}")
            else:
                result.images.append(rendered.png)
                result.previews.append(rendered.preview)
        else:
            result.figures_left_out += 1
        if number not in before:
            plt.close(figure)
    if current is not None and plt.fignum_exists(current) and current in before:
        plt.figure(current)  # drawing on the user's figure left it current
