"""Arguments of the magics, declared with IPython's ``magic_arguments``, and errors as one line.

- Each command declares its options on its handler (``@magic_arguments(name=...)`` and ``@argument``), so
  the handler carries an argparse parser and its docstring becomes the generated help that ``%silo?`` and
  ``%%prompt?`` show.
- Lines are split with :func:`shlex.split` (POSIX quoting: ``"my chat.md"`` is one argument without its
  quotes; an unclosed quote is an error) and then handed to the handler's parser. IPython's own
  ``parse_argstring`` splits with non-POSIX rules that keep the quotes inside the argument, which would
  change what a quoted path means.
- A bad option makes the parser raise ``UsageError(message)`` (``MagicArgumentParser.error``; never
  ``SystemExit``, and there is no ``-h``): it is re-raised as ONE line that names the command.
- :func:`expand` fills ``$var`` and ``{expr}`` as IPython does for its own line magics (its
  ``DollarFormatter``): the transformed (blocking) path bypasses ``run_line_magic``, where IPython would
  otherwise do it. :func:`did_you_mean` is the close-match hint (difflib) errors end with.
"""

from __future__ import annotations

import argparse
import difflib
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from IPython.core import magic_arguments as _ma
from IPython.core.error import UsageError
from IPython.utils.text import DollarFormatter

__all__ = [
    "argument",
    "command",
    "did_you_mean",
    "expand",
    "magic_arguments",
    "one_line",
    "parse",
    "split",
    "summary",
    "usage",
]

F = TypeVar("F", bound=Callable[..., Any])


def magic_arguments(name: str) -> Callable[[F], F]:
    """``IPython.core.magic_arguments.magic_arguments`` (typed): builds the parser, rewrites the doc."""
    decorator: Callable[[F], F] = _ma.magic_arguments(name)  # type: ignore[no-untyped-call]
    return decorator


def argument(*args: Any, **kwargs: Any) -> Callable[[F], F]:
    """``IPython.core.magic_arguments.argument`` (typed): one ``add_argument`` call."""
    decorator: Callable[[F], F] = _ma.argument(*args, **kwargs)  # type: ignore[no-untyped-call]
    return decorator


def _parser(handler: Callable[..., Any]) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = getattr(handler, "parser")  # noqa: B009 - set by magic_arguments
    return parser


def command(handler: Callable[..., Any]) -> str:
    """How the user types the command: ``%silo connect``, ``%%prompt``."""
    return f"%{_parser(handler).prog}"


def split(line: str, command_name: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError as exc:  # "No closing quotation" and the like
        raise UsageError(f"{command_name}: {exc}") from None


def _options(handler: Callable[..., Any]) -> list[str]:
    """The option strings the handler declares (read from its help, argparse's public face)."""
    return sorted(set(re.findall(r"(?<![\w-])--?[A-Za-z][\w-]*", _parser(handler).format_help())))


def parse(handler: Callable[..., Any], argv: list[str]) -> argparse.Namespace:
    """Parse ``argv`` with the handler's declared arguments; a bad option is one ``UsageError`` line,
    with a "did you mean" for a misspelt one."""
    try:
        return _parser(handler).parse_args(argv)
    except (UsageError, argparse.ArgumentError) as exc:
        known = _options(handler)
        flags = [a.split("=")[0] for a in argv if a.startswith("-")]
        wrong = next((flag for flag in flags if flag not in known), None)
        # Matched without the dashes, which would make every option look alike ("--bogus" ~ "--bg").
        bare = {option.lstrip("-"): option for option in known}
        close = difflib.get_close_matches(wrong.lstrip("-"), list(bare), n=1, cutoff=0.6) if wrong else []
        hint = f' — did you mean "{bare[close[0]]}"?' if close else ""
        raise UsageError(f"{command(handler)}: {exc}{hint}") from None


def usage(handler: Callable[..., Any]) -> str:
    """The one-line usage, e.g. ``%silo cancel [NAME]`` (argparse's, without IPython's RST prefix)."""
    text = _parser(handler).format_usage()
    return " ".join(text.replace("::", "", 1).split())


def summary(handler: Callable[..., Any]) -> str:
    """The first line of the handler's own description."""
    description = _parser(handler).description or ""
    return next((line.strip() for line in description.splitlines() if line.strip()), "")


def one_line(exc: BaseException) -> str:
    """The first line of an error, plus the last line of the agent's stderr when there is one."""
    lines = [line for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    head = lines[0]
    tail = [line for line in lines[1:] if not line.startswith("Agent stderr")]
    return f"{head} (agent stderr: {tail[-1].strip()})" if tail else head


def expand(line: str, namespace: Mapping[str, Any]) -> str:
    """``$name`` and ``{expression}`` filled from ``namespace``, exactly as IPython expands the lines of
    its own magics (``InteractiveShell.var_expand``); a line that does not format is left as written."""
    try:
        return str(DollarFormatter().vformat(line, args=[], kwargs=dict(namespace)))
    except Exception:  # IPython's own rule: a line it cannot format is used untransformed
        return line


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` — did you mean "x"?`` for the closest of ``choices``, or ``""`` when none is close."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    if not close:
        lowered = {choice.lower(): choice for choice in choices}
        close = [lowered[word.lower()]] if word.lower() in lowered else []
    return f' — did you mean "{close[0]}"?' if close else ""
