"""``fs/read_text_file`` and ``fs/write_text_file`` (``session/client_files.py``): only inside the session's
folders, atomic, capped, never through a link, and every write a journaled file edit."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from silo_nb.acp import AcpRpcError
from silo_nb.model.models import AgentSessionUpdate
from silo_nb.notebook.render import transcript_html, transcript_markdown, transcript_text
from silo_nb.sessions.journal import encode_line, parse_lines
from silo_nb.sessions.session.client_files import JOURNAL_TEXT_LIMIT, ClientFiles
from silo_nb.updates.entries import FileEditEntry
from silo_nb.updates.transcript import fold_all


def files(tmp_path: Path, **options: Any) -> tuple[ClientFiles, list[AgentSessionUpdate], Path]:
    folder = tmp_path / "work"
    folder.mkdir(exist_ok=True)
    lines: list[AgentSessionUpdate] = []
    settings = {"read": True, "write": True, "notebooks": False, "max_bytes": 1024 * 1024, **options}
    return ClientFiles(folders=(folder,), record=lines.append, **settings), lines, folder


async def refused(call: Any, params: dict[str, Any], code: int = -32602) -> str:
    with pytest.raises(AcpRpcError) as caught:
        await call(params)
    assert caught.value.code == code, caught.value
    return str(caught.value)


async def test_read_a_file_whole_and_by_line_and_limit(tmp_path: Path) -> None:
    client, _, folder = files(tmp_path)
    (folder / "a.txt").write_text("one\ntwo\nthree\n")
    assert await client.read({"path": str(folder / "a.txt")}) == {"content": "one\ntwo\nthree\n"}
    assert await client.read({"path": str(folder / "a.txt"), "line": 2, "limit": 1}) == {"content": "two\n"}
    assert await client.read({"path": str(folder / "a.txt"), "line": 3}) == {"content": "three\n"}
    assert "no such file" in await refused(client.read, {"path": str(folder / "missing")}, -32002)


async def test_nothing_outside_the_folders_is_read_or_written(tmp_path: Path) -> None:
    client, lines, folder = files(tmp_path)
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    (folder / "link").symlink_to(outside)
    (folder / "dirlink").symlink_to(tmp_path)
    for path in (
        str(outside),
        f"{folder}/../secret.txt",
        str(folder / "link"),
        str(folder / "dirlink/secret.txt"),
    ):
        message = await refused(client.read, {"path": path})
        assert "outside the session's folders" in message and str(folder) in message  # says what is allowed
        await refused(client.write, {"path": path, "content": "x"})
    assert outside.read_text() == "secret" and lines == []
    assert "absolute" in await refused(client.read, {"path": "relative.txt"})
    assert "not a regular file" in await refused(client.read, {"path": "/proc/self/environ"})


async def test_a_huge_file_is_refused_saying_the_cap(tmp_path: Path) -> None:
    client, _, folder = files(tmp_path)
    big = folder / "big.bin"
    with big.open("wb") as handle:
        handle.truncate(1 << 30)  # 1 GB, sparse: refused from its size, never read
    message = await refused(client.read, {"path": str(big)})
    assert "1024.0 MB" in message and "1.0 MB" in message and "fs_max_bytes" in message
    assert "fs_max_bytes" in await refused(
        client.write, {"path": str(folder / "n"), "content": "x" * (2 << 20)}
    )


async def test_a_fifo_is_not_read_and_does_not_hang(tmp_path: Path) -> None:
    client, _, folder = files(tmp_path)
    os.mkfifo(folder / "pipe")
    assert "not a regular file" in await refused(client.read, {"path": str(folder / "pipe")})
    assert "not a regular file" in await refused(client.write, {"path": str(folder / "pipe"), "content": "x"})


async def test_a_write_is_atomic_keeps_the_mode_and_is_a_journaled_edit(tmp_path: Path) -> None:
    client, lines, folder = files(tmp_path)
    target = folder / "script.sh"
    target.write_text("echo one\n")
    target.chmod(0o640)  # not executable: an executable file asks first (test_client_files_guard.py)
    assert await client.write({"path": str(target), "content": "echo two\n"}) == {}
    assert target.read_text() == "echo two\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in folder.iterdir()) == ["script.sh"]  # no temporary file left
    await client.write({"path": str(folder / "new.txt"), "content": "fresh\n"})
    assert (folder / "new.txt").read_text() == "fresh\n"
    restored = fold_all(parse_lines([encode_line(line) for line in lines]))
    first, second = restored.entries
    assert isinstance(first, FileEditEntry) and isinstance(second, FileEditEntry)
    assert (first.old_text, first.new_text) == ("echo one\n", "echo two\n")
    assert second.old_text is None  # a new file
    assert "+echo two" in transcript_text(restored) and "created" in transcript_markdown(restored)
    assert "script.sh" in transcript_html(restored)


async def test_a_notebook_is_not_written_raw_unless_the_profile_allows_it(tmp_path: Path) -> None:
    client, _, folder = files(tmp_path)
    message = await refused(client.write, {"path": str(folder / "a.ipynb"), "content": "{}"})
    assert "corrupts it" in message and "fs_write_notebooks" in message
    allowed, _, folder = files(tmp_path, notebooks=True)
    await allowed.write({"path": str(folder / "a.ipynb"), "content": "{}"})


async def test_each_direction_can_be_turned_off(tmp_path: Path) -> None:
    client, _, folder = files(tmp_path, read=False, write=False)
    (folder / "a.txt").write_text("x")
    assert "fs_read = false" in await refused(client.read, {"path": str(folder / "a.txt")})
    assert "fs_write = false" in await refused(client.write, {"path": str(folder / "a.txt"), "content": "y"})


async def test_a_write_too_large_for_the_journal_keeps_its_sizes_not_its_text(tmp_path: Path) -> None:
    client, lines, folder = files(tmp_path, max_bytes=8 * 1024 * 1024)
    await client.write({"path": str(folder / "big.txt"), "content": "y" * (JOURNAL_TEXT_LIMIT + 1)})
    (entry,) = fold_all(lines).entries
    assert isinstance(entry, FileEditEntry) and entry.too_large and entry.new_text is None
    assert "too large to keep a diff" in transcript_text(fold_all(lines))
