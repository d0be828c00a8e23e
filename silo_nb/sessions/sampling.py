"""Whether this run samples the agent: a new session and a real turn every run, nothing restored (issue 34).

A notebook run headless again and again (papermill, nbclient) would otherwise get the first run's
answers back: ``%silo connect`` resumes the session the notebook used last, a ``%%prompt`` cell whose turn
is in its journal is repainted from it, and ``run_grid`` skips the cells of a named run that are done.

- The switch: ``silo_sample`` in the notebook's namespace (a papermill parameter: ``-p silo_sample True``)
  or ``$SILO_NB_SAMPLE`` (any runner: ``SILO_NB_SAMPLE=1 jupyter nbconvert --execute ...``). The
  namespace wins; without one given, ``__main__``'s is read, which in a kernel is the user's.
- On: ``1``/``true``/``yes``/``on`` (any case) or a true bool or int; off: ``0``/``false``/``no``/``off``,
  empty, ``None`` or a false bool. Anything else is a ``ValueError`` saying what to set, never a guess.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["SAMPLE_ENV", "SAMPLE_VARIABLE", "sampling_asked"]

SAMPLE_VARIABLE = "silo_sample"
SAMPLE_ENV = "SILO_NB_SAMPLE"
_ON = ("1", "true", "yes", "on")
_OFF = ("", "0", "false", "no", "off")


def sampling_asked(namespace: Mapping[str, Any] | None = None) -> bool:
    """Whether ``silo_sample`` in ``namespace`` (default: ``__main__``'s) or ``$SILO_NB_SAMPLE`` is on."""
    if namespace is None:
        namespace = getattr(sys.modules.get("__main__"), "__dict__", {})
    if SAMPLE_VARIABLE in namespace:
        value = namespace[SAMPLE_VARIABLE]
        if value is None or isinstance(value, bool | int):
            return bool(value)
        return _switch(value if isinstance(value, str) else "?", f"{SAMPLE_VARIABLE} = {value!r:.40}")
    raw = os.environ.get(SAMPLE_ENV, "")
    return _switch(raw, f"{SAMPLE_ENV}={raw!r:.40}")


def _switch(value: str, said: str) -> bool:
    lowered = value.strip().lower()
    if lowered in _ON:
        return True
    if lowered in _OFF:
        return False
    raise ValueError(
        f"{said} is neither on nor off — set it to True (1) to ask the agent again at every run, "
        "or False (0)."
    )
