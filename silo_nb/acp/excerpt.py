"""Which stderr lines explain a failure: the cause, not the last backtrace frame or a stray warning.

- Agents print a lot around an error: Rust backtraces (``RUST_BACKTRACE=1`` is common) end with frames
  such as ``at ./nptl/../sysdeps/unix/sysv/linux/x86_64/clone3.S:81:0``; Node stack traces end with
  ``    at process.processTicksAndRejections (…)``; log lines at WARN/INFO level are unrelated noise.
- :func:`error_excerpt` keeps lines that look like errors (``Error:``, ``panicked``, ``fatal``, ``does not
  exist``…), never frames or ``WARN``/``INFO`` log lines, the last ``limit`` of them in order. With
  ``fallback`` it falls back to the last non-frame, non-noise lines, then to the plain tail, so an exit
  message never loses the only text there is. The whole ring stays available (``stderr_tail``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["error_excerpt", "looks_like_error"]

# A stack frame, a backtrace header, or a frame number line ("  12: codex_acp::main").
_FRAME = re.compile(
    r"^\s*(at\s|\d+:\s|stack backtrace:|note: run with `RUST_BACKTRACE|\.\.\.\s*\d+\s+more|"
    r"File \"|Traceback \(most recent call last\))",
    re.IGNORECASE,
)
# Log lines at a level below error, in the shapes agents print them (tracing, log4js, pino, Python).
_NOISE = re.compile(
    r"(^|\s|\[|\b)(WARN(ING)?|INFO|DEBUG|TRACE)(\]|:|\s)|^\s*(warning|info|debug)\b", re.IGNORECASE
)
_ERROR = re.compile(
    r"(error|fatal|panic|exception|denied|refused|failed|failure|does not exist|no such file|not found|"
    r"not set|missing|invalid|unauthori[sz]ed|forbidden|cannot|can't|could not|unable to|required)",
    re.IGNORECASE,
)


def looks_like_error(line: str) -> bool:
    """A line that states a cause: error words, and not a frame or a lower-level log line."""
    return bool(_ERROR.search(line)) and not _FRAME.match(line) and not _is_noise(line)


def _is_noise(line: str) -> bool:
    # "WARN … error …" is still a warning; but a line that names itself an error ("ERROR", "Error:") wins.
    return bool(_NOISE.search(line)) and not re.search(r"\bERROR\b|\bError:", line)


def error_excerpt(lines: Sequence[str], limit: int = 5, *, fallback: bool = True) -> list[str]:
    """The last ``limit`` lines of ``lines`` that explain a failure (see the module docstring).

    Without ``fallback`` only error-looking lines. With it, the last lines that are neither frames nor
    noise, always including the last error-looking line (what follows it is usually its context)."""
    if limit <= 0:
        return []
    if not fallback:
        return [line for line in lines if looks_like_error(line)][-limit:]
    plain = [line for line in lines if not _FRAME.match(line) and not _is_noise(line)]
    if not plain:
        return list(lines)[-limit:]
    errors = [index for index, line in enumerate(plain) if looks_like_error(line)]
    if not errors or errors[-1] >= len(plain) - limit:
        return plain[-limit:]
    last = errors[-1]
    return [plain[last], *plain[last + 1 :][-(limit - 1) :]] if limit > 1 else [plain[last]]
