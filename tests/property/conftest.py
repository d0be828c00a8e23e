"""Hypothesis profiles for the property suite (issue 8, item 10).

- ``ci`` (the default): ``derandomize=True`` — the same examples on every run and every machine, so a CI
  failure reproduces locally; no example database; a per-example deadline generous enough for a loaded
  2-core runner. ``max_examples`` is set per test (the whole suite stays under ~30 s).
- ``explore``: random seeds and 10x the examples, for a local bug hunt (``HYPOTHESIS_PROFILE=explore``).
"""

from __future__ import annotations

import os
from datetime import timedelta

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=timedelta(seconds=2),
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "explore",
    parent=settings.get_profile("ci"),
    derandomize=False,
    max_examples=1000,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
