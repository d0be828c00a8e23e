"""The restore index (``notebook/journal_index.py``): the same turn as ``split_turns`` over the whole
journal, found from an index built once per kernel and extended by what was appended."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

from silo_nb.model.models import AgentContentBlock, AgentSessionUpdate
from silo_nb.notebook import journal_index
from silo_nb.notebook.journal_index import JournalIndex, JournalIndexes
from silo_nb.sessions.journal import MAX_LINE_BYTES, JournalFiles, encode_line, parse_lines, read_lines
from silo_nb.updates.journal_turns import split_turns
from silo_nb.updates.parse import parse_update


def user(text: str, cell: str | None, *, synthesized: bool = True) -> AgentSessionUpdate:
    raw: dict[str, Any] = {"synthesized": True} if synthesized else {}
    if cell is not None:
        raw["cellId"] = cell
    return AgentSessionUpdate(
        kind="user_message_chunk", text=text, content=AgentContentBlock(type="text", text=text), raw=raw
    )


def agent(text: str) -> AgentSessionUpdate:
    update = parse_update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})
    assert update is not None
    return update


def slow_lookup(path: Path, cell: str, text: str) -> list[AgentSessionUpdate] | None:
    found = None
    for turn in split_turns(parse_lines(read_lines(path))):
        first = turn.updates[0]
        if first.kind == "user_message_chunk" and first.raw.get("cellId") == cell and first.text == text:
            found = list(turn.updates)
    return found


def random_line(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.15:
        return encode_line(user(rng.choice("ab"), rng.choice(["c1", "c2", "c3", None])))
    if roll < 0.25:  # an agent's load replay: user chunks it sent, not synthesized
        return encode_line(user(rng.choice("ab"), rng.choice(["c1", None]), synthesized=False))
    if roll < 0.3:
        return encode_line(agent("mentions user_message_chunk in its text"))
    if roll < 0.33:
        return rng.choice(["", "   ", "{torn", "not json user_message_chunk"])
    return encode_line(agent(rng.choice(["x", "y", "ü"])))


def test_the_index_finds_what_split_turns_finds_while_the_file_grows(tmp_path: Path) -> None:
    rng = random.Random(11)
    for round_ in range(40):
        path = tmp_path / f"j{round_}.jsonl"
        path.write_text("")
        index = JournalIndex(path)
        for _ in range(rng.randint(1, 5)):
            with open(path, "a", encoding="utf-8") as handle:
                handle.write("".join(random_line(rng) + "\n" for _ in range(rng.randint(0, 25))))
            index.refresh()
            for cell in ("c1", "c2", "c3", "c4"):
                for text in ("a", "b"):
                    assert index.turn(cell, text) == slow_lookup(path, cell, text), (round_, cell, text)


def test_a_torn_tail_waits_and_a_replaced_file_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    first = encode_line(user("a", "c1")) + "\n" + encode_line(agent("one")) + "\n"
    line = encode_line(user("b", "c2"))
    path.write_text(first + line[:10])
    index = JournalIndex(path)
    index.refresh()
    assert index.turn("c2", "b") is None and index.turn("c1", "a") is not None
    with open(path, "a") as handle:
        handle.write(line[10:] + "\n" + encode_line(agent("two")) + "\n")
    index.refresh()
    turn = index.turn("c2", "b")
    assert turn is not None and [u.text for u in turn] == ["b", "two"]
    replacement = tmp_path / "new.jsonl"
    replacement.write_text(encode_line(user("z", "c9")) + "\n")
    os.replace(replacement, path)  # a load reconciliation rewrites the file this way
    index.refresh()
    assert index.turn("c2", "b") is None and index.turn("c9", "z") is not None


def test_find_turn_reads_the_journal_once_then_only_appends(tmp_path: Path, monkeypatch: Any) -> None:
    journals = JournalFiles(tmp_path)
    path = journals.path("ws", "s1")
    path.parent.mkdir(parents=True)
    lines = []
    for n in range(50):
        lines += [
            encode_line(user(f"q{n}", f"cell{n}")),
            *(encode_line(agent(f"r{n}.{i}")) for i in range(20)),
        ]
    path.write_text("".join(line + "\n" for line in lines))
    parsed: list[int] = []
    real = journal_index.parse_lines

    def counting(batch: Any) -> list[AgentSessionUpdate]:
        batch = list(batch)
        parsed.append(len(batch))
        return real(batch)

    real_read = journal_index.read_updates

    def counting_read(*args: Any, **kwargs: Any) -> list[AgentSessionUpdate]:
        read = real_read(*args, **kwargs)
        parsed.append(len(read))
        return read

    monkeypatch.setattr(journal_index, "parse_lines", counting)
    monkeypatch.setattr(journal_index, "read_updates", counting_read)
    indexes = JournalIndexes()
    for n in range(50):
        turn = indexes.find_turn(journals, path, f"cell{n}", f"q{n}")
        assert turn is not None and len(turn) == 21 and turn[-1].text == f"r{n}.19"
    # Indexing parsed only the 50 prompt lines; each lookup parsed its own turn's 21 lines.
    assert sum(parsed) == 50 + 50 * 21
    assert indexes.find_turn(journals, path, "cell3", "other text") is None


def test_a_huge_line_or_hole_is_stepped_over_in_bounded_memory(tmp_path: Path) -> None:
    """Issue 21, item 8: a 256 MiB hole (a sparse file) and a line over the line limit between two turns;
    the index reads neither whole (before: the whole file in one read, a copy per slice)."""
    import tracemalloc

    journals = JournalFiles(tmp_path)
    path = journals.path("ws", "s1")
    journals.check(path, folder_only=True)
    with path.open("wb") as file:
        file.write((encode_line(user("q1", "cell1")) + "\n" + encode_line(agent("r1")) + "\n").encode())
        file.seek(256 << 20, os.SEEK_CUR)
        file.write(b"\n" + b"x" * (MAX_LINE_BYTES + 10) + b"\n")
        file.write((encode_line(user("q2", "cell2")) + "\n" + encode_line(agent("r2")) + "\n").encode())
    indexes = JournalIndexes()
    tracemalloc.start()
    try:
        first = indexes.find_turn(journals, path, "cell1", "q1")
        second = indexes.find_turn(journals, path, "cell2", "q2")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert first is not None and [u.text for u in first] == ["q1", "r1"]
    assert second is not None and [u.text for u in second] == ["q2", "r2"]
    assert peak < MAX_LINE_BYTES + (16 << 20)  # one line up to the limit, plus chunks: never the hole
