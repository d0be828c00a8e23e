"""The demo agent's command-line flags (also the ``argv`` of the in-process ``serve``).

- Flags switch capabilities off (``--no-load``, ``--no-resume``, ``--no-list``, ``--no-embedded-context``)
  or change the shape of the session (``--legacy-modes``, ``--auth-required``) so that each branch of a
  client can be tested; ``--delay`` paces the stream and ``--state-dir`` is where sessions persist.
- Defaults come from ``SILO_NB_DEMO_DELAY`` and ``SILO_NB_DEMO_STATE_DIR``, read when the flags are parsed;
  without the latter, sessions go to the user's data folder (``<data dir>/agents/demo``: ``user_dirs.py``).
- On the command line a bad flag exits with argparse's usage error; in-process it raises ``ValueError``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final, NoReturn

from silo_nb_agents.user_dirs import agent_state_dir

DEFAULT_DELAY: Final = 0.03
PROG: Final = "python -m silo_nb_agents.demo"


class Options:
    """The parsed command-line flags."""

    def __init__(self, ns: argparse.Namespace) -> None:
        self.load: bool = not ns.no_load
        self.resume: bool = not ns.no_resume
        self.list: bool = not ns.no_list
        self.legacy_modes: bool = ns.legacy_modes
        self.auth_required: bool = ns.auth_required
        self.auth_on_prompt: bool = ns.auth_on_prompt
        self.embedded_context: bool = not ns.no_embedded_context
        self.images: bool = not ns.no_images
        self.fork: bool = not ns.no_fork
        self.rewind: bool = not ns.no_rewind
        self.system_prompt: bool = not ns.no_system_prompt
        self.delay: float = max(0.0, float(ns.delay))
        self.state_dir = Path(ns.state_dir)


class _RaisingParser(argparse.ArgumentParser):
    """A parser for in-process use: a bad flag raises instead of exiting the caller's process."""

    def error(self, message: str) -> NoReturn:
        raise ValueError(f"{self.prog}: {message}")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:  # e.g. after --help
        raise ValueError(message or f"{self.prog}: exited with status {status}")


def _default_state_dir() -> str:
    configured = os.environ.get("SILO_NB_DEMO_STATE_DIR")
    # Not a shared /tmp name when the user has a folder of their own (a shared server: user_dirs.py).
    return configured or str(agent_state_dir("demo"))


def _default_delay() -> float:
    try:
        return float(os.environ.get("SILO_NB_DEMO_DELAY", DEFAULT_DELAY))
    except ValueError:
        return DEFAULT_DELAY


def parse_args(argv: Sequence[str] | None = None, *, exit_on_error: bool = True) -> Options:
    """Parse ``argv`` (``sys.argv[1:]`` when None); with ``exit_on_error=False`` errors raise ValueError."""
    parser_class = argparse.ArgumentParser if exit_on_error else _RaisingParser
    parser = parser_class(prog=PROG, description="A scripted ACP v1 agent speaking JSON-RPC on stdio.")
    parser.add_argument("--no-load", action="store_true", help="loadSession false; session/load is -32601")
    parser.add_argument(
        "--no-resume", action="store_true", help="no resume capability; session/resume is -32601"
    )
    parser.add_argument("--no-list", action="store_true", help="no list capability; session/list is -32601")
    parser.add_argument("--legacy-modes", action="store_true", help="legacy modes/models, no configOptions")
    parser.add_argument("--auth-required", action="store_true", help="session/new fails with -32000")
    parser.add_argument(
        "--auth-on-prompt",
        action="store_true",
        help="prompts fail with -32000 until authenticate",
    )
    parser.add_argument(
        "--no-embedded-context", action="store_true", help="promptCapabilities.embeddedContext false"
    )
    parser.add_argument("--no-images", action="store_true", help="promptCapabilities.image false")
    parser.add_argument("--no-fork", action="store_true", help="no fork capability; session/fork is -32601")
    parser.add_argument(
        "--no-rewind", action="store_true", help="no _session/rewind extension; its methods are -32601"
    )
    parser.add_argument(
        "--no-system-prompt", action="store_true", help="no systemPrompt capability; one sent is -32602"
    )
    parser.add_argument(
        "--delay", type=float, default=_default_delay(), help="seconds between streamed steps (0: no pauses)"
    )
    parser.add_argument("--state-dir", default=_default_state_dir(), help="where sessions are persisted")
    return Options(parser.parse_args(None if argv is None else list(argv)))
