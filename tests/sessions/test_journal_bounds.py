"""Issue 21, item 8: journal reads stream with bounded memory whatever the file.

- Lines over the line limit are skipped without being held, and counted (one warning per read).
- A 2 GiB sparse journal (a real sparse file: a line, a 2 GiB hole, a line) is read, resumed and scanned
  by ``%silo agents`` in a child process whose address space is capped at 1 GiB: before, each of them
  needed the whole file in memory several times over (8.2 GB for ``read_journal``) and failed there with
  ``MemoryError``; now each keeps the two lines. The figures (peak memory, time) are in
  ``benchmarks/journal_bounds.py``.
- Strings longer than 1 Mi characters reach the journal whole (up to the line limit): the journal is the
  record; only the views are bounded.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from silo_nb.model.kinds import USER_PROMPT_KIND
from silo_nb.sessions.journal import ReadCounts, iter_blocks, read_updates
from tests.conftest import Workspace


def line(text: str) -> bytes:
    return json.dumps({"kind": "agent_message_chunk", "text": text}).encode() + b"\n"


def prompt_line(text: str) -> bytes:
    value = {"kind": USER_PROMPT_KIND, "text": text, "raw": {"synthesized": True}}
    return json.dumps(value).encode() + b"\n"


def test_a_line_over_the_limit_is_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_bytes(line("before") + b"x" * (3 << 20) + b"\n" + line("after") + b"y" * (3 << 20))
    counts = ReadCounts()
    fd = os.open(path, os.O_RDONLY)
    try:
        blocks = list(iter_blocks(fd, limit=1 << 20, counts=counts))
    finally:
        os.close(fd)
    assert b"".join(blocks) == line("before") + line("after")
    assert counts.skipped == 2  # the long line, and the long torn tail
    assert max(len(block) for block in blocks) <= 2 << 20


def test_a_read_skips_nul_holes_and_says_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "j.jsonl"
    with path.open("wb") as file:
        file.write(line("before"))
        file.seek(100 << 20, os.SEEK_CUR)  # a hole: 100 MiB of NULs, no newline
        file.write(b"\n" + line("after"))
    with caplog.at_level(logging.WARNING, logger="silo_nb.journal"):
        updates = read_updates(path)
    assert [u.text for u in updates] == ["before", "after"]
    assert "1 line(s) over the 64 MiB line limit" in caplog.text


SPARSE_PROBE = """
import asyncio, resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
import silo_nb
from silo_nb.sessions.dormant_sessions import find_dormant
svc = silo_nb.AgentsService(workspace_dir=Path(sys.argv[1]), config_dirs=[], data_dir=Path(sys.argv[2]))
print("read", [u.text for u in asyncio.run(svc.sessions.read_journal(sys.argv[3]))], flush=True)
print("scan", [d.session_id for d in find_dormant(svc.data_dir, svc.workspace_id)], flush=True)
async def resume():
    async with await svc.sessions.connect("demo", resume={"session_id": sys.argv[3]}) as handle:
        print("resumed", handle.resume_outcome, [u.text for u in handle.journal], flush=True)
asyncio.run(resume())
"""


async def test_a_2_gib_sparse_journal_is_read_resumed_and_scanned_in_bounded_memory(
    workspace: Workspace,
) -> None:
    svc = workspace.service()
    path = svc.sessions.journals.path(svc.workspace_id, "sparse-session")
    svc.sessions.journals.check(path, folder_only=True)  # the data folder, made as silo_nb makes it
    with path.open("wb") as file:
        os.fchmod(file.fileno(), 0o600)
        file.write(prompt_line("first"))
        file.seek(2 << 30, os.SEEK_CUR)
        file.write(b"\n" + prompt_line("last"))
    assert os.stat(path).st_blocks * 512 < 1 << 20, "the file is sparse"
    result = subprocess.run(
        [sys.executable, "-c", SPARSE_PROBE, str(workspace.folder), str(workspace.data), "sparse-session"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == [
        "read ['first', 'last']",
        "scan ['sparse-session']",
        "resumed journal-only ['first', 'last']",
    ]
