"""``framing.decode_line`` and ``encode_message`` (issue 10: orjson, the stdlib wherever orjson differs)
and ``LineFramer`` cutting lines out of arbitrary chunkings."""

from __future__ import annotations

import json
import logging
import math
import random
from typing import Any

import pytest

from silo_nb.acp.framing import LineFramer, cut_depth, decode_line, encode_message, has_long_number

# Every line here must decode to exactly what the stdlib's json.loads gives (its values are the contract).
SAME_AS_STDLIB = [
    b'{"jsonrpc":"2.0","method":"session/update","params":{"update":{"text":"token 1 "}}}',
    b'{"n":123456789012345678901234567890,"m":-9223372036854775809}',  # orjson: floats, silently
    b'{"u":18446744073709551615,"i":-9223372036854775808,"big":[184467440737095516160]}',
    b'{"s":"12345678901234567890123","x":1}',  # 19 digits in a string: the slow path, same value
    b'{"t":"lone \\ud800 surrogate","pair":"\\ud83d\\ude00"}',  # orjson refuses the lone one
    b'{"nan":NaN,"inf":Infinity,"ninf":-Infinity,"huge":1e400}',  # the stdlib's extensions
    b'{"f":[1.5e-7,1e20,-0.0,0.1,2.0,5e-324]}',
    b'{"dup":1,"dup":2}',
    b'[{"a":1},{"b":[true,false,null]}]',
    b'"\\u00e9\\u2028\\u0000"',
]


def same(a: Any, b: Any) -> bool:
    """Equal as values, with NaN equal to NaN and ints never equal to floats."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) and (not isinstance(a, float) or math.copysign(1, a) == math.copysign(1, b))


@pytest.mark.parametrize("line", SAME_AS_STDLIB, ids=range(len(SAME_AS_STDLIB)))
def test_decoding_gives_the_stdlib_s_values(line: bytes) -> None:
    assert same(decode_line(line), json.loads(line))


def test_integers_beyond_64_bits_keep_their_value() -> None:
    value = decode_line(b'{"n":123456789012345678901234567890}')
    assert value["n"] == 123456789012345678901234567890 and type(value["n"]) is int


@pytest.mark.parametrize(
    "line", [b"", b"   ", b"nope", b'{"a":', b'{"a":1} x', b"\xff\xfe", b'{"n":' + b"7" * 5000 + b"}"]
)
def test_what_the_stdlib_refuses_is_refused(line: bytes) -> None:
    with pytest.raises(ValueError):
        decode_line(line)


def test_long_number_check_looks_for_a_run_of_19_digits() -> None:
    assert has_long_number(b"[1234567890123456789]")
    assert not has_long_number(b"[123456789012345678, 1234567890.12345678]")


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 1, "result": {"text": "é\n😀", "n": 2**63 - 1}},
        {"id": 2, "result": {"big": 2**70}},
        {"id": 3, "result": "lone \ud800"},
        {"id": 4, "result": {1: "non-string key"}},
    ],
    ids=["plain", "big int", "lone surrogate", "int key"],
)
def test_encoding_is_one_utf8_line_that_reads_back(message: dict[str, Any]) -> None:
    data = encode_message(message)
    assert data.endswith(b"\n") and data.count(b"\n") == 1
    data.decode("utf-8")  # strict
    assert json.loads(data) == json.loads(json.dumps(message))


def test_cut_depth_replaces_only_what_is_too_deep_and_copies_nothing_otherwise() -> None:
    shallow = {"a": [1, {"b": 2}], "c": "d"}
    assert cut_depth(shallow, 3, "X") is shallow  # three levels of containers: kept, uncopied
    assert cut_depth(shallow, 2, "X") == {"a": [1, "X"], "c": "d"}
    assert cut_depth(shallow, 1, "X") == {"a": "X", "c": "d"}
    deep: Any = "leaf"
    for _ in range(150):
        deep = {"k": deep}
    cut = cut_depth({"raw": deep}, 100, "X")
    level, depth = cut, 0
    while isinstance(level, dict):
        level, depth = next(iter(level.values())), depth + 1
    assert level == "X" and depth == 100  # 100 levels of containers kept, the marker below them


@pytest.mark.parametrize("seed", range(5))
def test_any_chunking_gives_the_same_lines(seed: int) -> None:
    rng = random.Random(seed)
    lines = [bytes(rng.choice(b'ab{}" ') for _ in range(rng.randrange(0, 300))) for _ in range(200)]
    data = b"\n".join(lines) + b"\n"
    framer = LineFramer(max_line_bytes=1000)
    got: list[bytes] = []
    start = 0
    while start < len(data):
        size = rng.choice([1, 2, 7, 64, 1000, 5000])
        got += framer.feed(data[start : start + size])
        start += size
    assert got == lines and framer.end() is None


def test_over_long_lines_are_dropped_in_every_chunking(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "silo_nb.acp")
    data = b"short\n" + b"x" * 250 + b"\nafter\n" + b"y" * 120 + b"\nlast"
    for size in (1, 3, 50, 100, 101, 1000):
        framer = LineFramer(max_line_bytes=100)
        got = [
            line for start in range(0, len(data), size) for line in framer.feed(data[start : start + size])
        ]
        assert got == [b"short", b"after"], size
        assert framer.end() == b"last"
    assert any("dropped" in r.getMessage() for r in caplog.records)
