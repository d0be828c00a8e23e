"""Shared by the benchmark scripts: replace one named section of ``benchmarks/RESULTS.md``."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def write_section(name: str, lines: list[str]) -> None:
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    section = f"## {name}\n\n```\n" + "\n".join(lines) + "\n```\n"
    head, found, tail = text.partition(f"## {name}\n")
    rest = tail.split("\n## ", 1)[1] if found and "\n## " in tail else ""
    RESULTS.write_text(head.rstrip() + "\n\n" + section + ("\n## " + rest if rest else ""))
