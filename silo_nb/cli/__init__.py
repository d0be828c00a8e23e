"""The programs: ``python -m silo_nb install | demo | run``. Above every layer; each command loads its
module only when it runs, so ``python -m silo_nb install`` imports no session code.

- ``install`` (``install.py``): the silo kernel and a starter profiles file.
- ``demo [PROMPT]`` (``demo.py``): one turn against the demo agent in a terminal.
- ``run [NOTEBOOK]`` (``demo_notebook.py`` with ``demo_needs.py``): a notebook headless, twice (what
  ``bash .ci/demo`` runs).
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["COMMANDS", "main"]

# command -> (module, what it does); the module's ``main(argv)`` takes the arguments after the command.
COMMANDS = {
    "install": ("silo_nb.cli.install", "register the silo kernel and write starter profiles"),
    "demo": ("silo_nb.cli.demo", "one turn against the demo agent (or --profile ID) in this terminal"),
    "run": ("silo_nb.cli.demo_notebook", "run a notebook headless against the demo agent, twice"),
}
USAGE = "usage: python -m silo_nb {" + ",".join(COMMANDS) + "} [options]   (--help after one for its own)"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        for name, (_, what) in COMMANDS.items():
            print(f"  {name:<8} {what}")
        return 0 if args else 2
    if args[0] not in COMMANDS:
        print(f"error: unknown command {args[0]!r}; {USAGE}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[args[0]][0])
    code: int = module.main(args[1:])
    return code
