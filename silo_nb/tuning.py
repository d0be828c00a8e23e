"""The two process-wide settings of the kernel's Python that silo_nb may change, each behind one switch.

The kernel's interpreter is the user's: silo_nb changes a setting of it only to keep the kernel fast, and
each change can be turned off.

- ``switch_interval``: while a live turn streams, the GIL switch interval goes from Python's 5 ms to 1 ms,
  so that ipykernel's own threads answer a ``1+1`` between updates (``notebook/_responsive.py``).
- ``gc_tuning``: while a restore builds a journal's objects or folds them, the cyclic garbage collector
  is paused, and after a big build what it made goes to the oldest generation (``util.gc_paused``). Both
  parts are one switch: both touch the user's collector.

Each is on unless its environment variable (``SILO_NB_SWITCH_INTERVAL``, ``SILO_NB_GC_TUNING``) says
``0``/``off``/``false``/``no``, read once, at import; :func:`set_tuning` changes either at run time. The
code that changes a setting asks :func:`tuning` each time it is about to, so a change applies to the next
turn or restore. ``benchmarks/RESULTS.md`` ("Interpreter tuning switches: on vs off") has what each buys.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["ENVIRONMENT", "Tuning", "set_tuning", "tuning"]

log = logging.getLogger("silo_nb")

ENVIRONMENT: Mapping[str, str] = MappingProxyType(
    {"switch_interval": "SILO_NB_SWITCH_INTERVAL", "gc_tuning": "SILO_NB_GC_TUNING"}
)
_OFF = frozenset({"0", "off", "false", "no"})
_ON = frozenset({"1", "on", "true", "yes"})


@dataclasses.dataclass(frozen=True, slots=True)
class Tuning:
    """Which of the interpreter's settings silo_nb may change (a value: replaced, never mutated)."""

    switch_interval: bool = True
    gc_tuning: bool = True


def _switch_from(name: str, default: bool) -> bool:
    value = os.environ.get(name, "").strip().lower()
    if value in _OFF:
        return False
    if value in _ON:
        return True
    if value:  # a typo should not pass unseen: the user meant to change something
        log.warning("%s=%r is not one of 0/1, off/on, false/true, no/yes: left %s", name, value, default)
    return default


def _from_environment() -> Tuning:
    default = Tuning()
    return Tuning(**{field: _switch_from(env, getattr(default, field)) for field, env in ENVIRONMENT.items()})


# The one piece of state: replaced whole by set_tuning, so a reader never sees half of a change.
_current = _from_environment()


def tuning() -> Tuning:
    """The switches in force now."""
    return _current


def set_tuning(*, switch_interval: bool | None = None, gc_tuning: bool | None = None) -> Tuning:
    """Turn either switch on or off (``None``: leave it); returns the switches as they were, so that
    ``set_tuning(**dataclasses.asdict(previous))`` puts them back. A turn already streaming keeps the
    interval it set until it ends; a build already running finishes as it started."""
    global _current
    previous = _current
    changes = {"switch_interval": switch_interval, "gc_tuning": gc_tuning}
    for field, value in changes.items():
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"set_tuning({field}=...) takes True, False or None, got {value!r}")
    _current = dataclasses.replace(previous, **{k: v for k, v in changes.items() if v is not None})
    return previous
