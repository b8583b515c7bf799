"""LineSplitter against a model written from its contract (collectors/lines.py's docstring): however a
file's bytes arrive in pieces, each complete line comes out once, with its end offset, its number, its
first `max_line` bytes as text without a trailing CR, invalid UTF-8 replaced, and the counters right.
Blocks of plain ASCII take the C-iterator path and any other block the line-by-line one, so the pieces
here mix both within one file."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from kvwatch.collectors.base import Line
from kvwatch.collectors.lines import LineSplitter

MAX_LINE = 8
ATOMS = [b"a", b"Decode batch, #running-req: 3", b"\n", b"\n", b"\n", b"\r", b"\xc3\xa9", b"\xff", b"\xef\xbf\xbd",
         b"x" * 9]


def expected(data: bytes, generation: int, offset: int, line_no: int) -> tuple[list[Line], int, int]:
    lines: list[Line] = []
    truncated = replaced = 0
    end = offset
    for raw in data.split(b"\n")[:-1]:
        end += len(raw) + 1
        kept = raw[:MAX_LINE]
        if kept.endswith(b"\r"):
            kept = kept[:-1]
        text = kept.decode("utf-8", "replace")
        truncated += len(raw) > MAX_LINE
        replaced += "\ufffd" in text and b"\xef\xbf\xbd" not in kept
        line_no += 1
        lines.append(Line("server_log", generation, end, line_no, text))
    return lines, truncated, replaced


@settings(max_examples=400, deadline=None)
@given(
    atoms=st.lists(st.sampled_from(ATOMS), max_size=60),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=8),
    offset=st.integers(min_value=0, max_value=10_000),
    line_no=st.integers(min_value=0, max_value=50),
)
def test_any_split_of_the_bytes_gives_the_model_s_lines(atoms: list[bytes], cuts: list[int], offset: int,
                                                      line_no: int) -> None:
    data = b"".join(atoms)
    splitter = LineSplitter("server_log", 3, offset, line_no, max_line=MAX_LINE)
    got: list[Line] = []
    bounds = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    for lo, hi in pairwise(bounds):
        got += splitter.feed(data[lo:hi])
    lines, truncated, replaced = expected(data, 3, offset, line_no)
    assert got == lines
    assert all(type(line) is Line for line in got)
    assert (splitter.truncated_lines, splitter.replaced_lines) == (truncated, replaced)
    complete = data.rfind(b"\n") + 1
    assert splitter.offset == offset + complete
    assert splitter.line_no == line_no + len(lines)
    assert splitter.pending == len(data) - complete


def test_a_catch_up_block_of_plain_lines_keeps_offsets_and_numbers() -> None:
    body = b"".join(b"line %d\n" % i for i in range(1, 5001)) + b"partial"
    splitter = LineSplitter("server_log", 1, 100, 0)
    lines = splitter.feed(body)
    assert len(lines) == 5000
    assert lines[0] == Line("server_log", 1, 100 + len(b"line 1\n"), 1, "line 1")
    assert lines[-1].offset == 100 + body.rfind(b"\n") + 1 and lines[-1].line_no == 5000
    assert splitter.feed(b" end\n") == [Line("server_log", 1, 100 + len(body) + 5, 5001, "partial end")]
