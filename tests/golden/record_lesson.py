"""Record the lesson the teaching notebook replays: ``python -m tests.golden.record_lesson``.

A real session with the demo agent (a subprocess, through silo_nb's own client), four turns — a plan, an
agent command, an edit whose permission is allowed, the tests run in a terminal — journaled as any
session is, then copied to ``notebooks/data/penguin-lesson.jsonl`` with the temporary folder it ran in
written as ``/home/teacher/lesson`` (the diff's path is the only place it shows). The replay agent
(``silo_nb.replay_agent``) plays it back; ``tests/replay_agent`` checks the shipped file is one.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import anyio

import silo_nb

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "notebooks" / "data" / "penguin-lesson.jsonl"
PLACE = "/home/teacher/lesson"
PROMPTS = [
    "Make a plan for checking the penguin measurements",
    "/explain the greet function",
    "Edit notes.md: two bill lengths are missing",
    "Please run the tests",
]


async def record(folder: Path) -> Path:
    (folder / "project").mkdir()
    notes = "# Field notes\n\n- 344 penguins measured on three islands\n"
    (folder / "project" / "notes.md").write_text(notes)
    os.environ["SILO_NB_DEMO_STATE_DIR"] = str(folder / "demo-state")
    agents = silo_nb.AgentsService(workspace_dir=folder / "project", config_dirs=[], data_dir=folder / "data")
    handle = await agents.sessions.connect("demo", title="Checking the penguin measurements")
    handle.on_permission(lambda request: request.respond("allow-once"))
    try:
        for text in PROMPTS:
            await handle.prompt([{"type": "text", "text": text}])
    finally:
        await handle.aclose()
    return agents.sessions.journals.path(agents.workspace_id, handle.session_id)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp).resolve()
        journal = anyio.run(record, folder)
        text = journal.read_text(encoding="utf-8").replace(str(folder / "project"), PLACE)
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET.relative_to(ROOT)} ({len(text.splitlines())} lines)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
