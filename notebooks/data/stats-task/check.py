"""`python check.py FUNCTION`: exit 0 when stats.FUNCTION gives the right answers, 1 when it does not."""

import sys

import stats

CASES = {
    "mean": [([1, 2, 3, 4], 2.5), ([5], 5)],
    "median": [([3, 1, 2], 2), ([4, 1, 3, 2], 2.5), ([7], 7)],
    "mode": [([1, 2, 2, 3], 2), ([4, 4, 1, 1], 1)],
    "variance": [([1, 2, 3, 4], 5 / 3), ([2, 4], 2)],
}

name = sys.argv[1]
failed = 0
for values, expected in CASES[name]:
    try:
        got = getattr(stats, name)(list(values))
    except Exception as exc:  # a stub, or a crash
        got = f"{type(exc).__name__}: {exc}"
    ok = isinstance(got, int | float) and abs(got - expected) < 1e-9
    failed += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {name}({values}) = {got!r}, expected {expected!r}")
sys.exit(1 if failed else 0)
