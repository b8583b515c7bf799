"""parsers/columnar_split.py says which lines fully match a shape without a regex: it must give the
answer of the shape's own regex (RE2, as the columnar path used before), line for line, and cut out the
same values."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvwatch.parsers.columnar_split import Split
from kvwatch.parsers.shapes import Shape, _shape_of

SHAPE_LINES = [
    ("decode", "[2026-02-24 10:00:00 TP0] Decode batch, #running-req: 12, #token: 3400, token usage: 0.52, "
     "cuda graph: True, gen throughput (token/s): 812.40, #queue-req: 3, "),
    ("prefill", "[2026-02-24 10:00:00.123 DP1 TP1] Prefill batch. #new-seq: 1, #new-token: 8192, "
     "#cached-token: 0, token usage: 0.52, #running-req: 12, #queue-req: 3"),
    ("decode", "[2026-02-24 10:00:00] Decode batch,#running-req: 1, gen throughput (token/s): 1.5."),
]
SHAPES = [shape for kind, line in SHAPE_LINES if (shape := _shape_of(kind, line)) is not None]
# Pieces that make near misses: each one is a byte a check could let through by mistake.
NOISE = st.sampled_from(
    ["", "0", "9", "12", ".", "..", "1.5", "-1", "+1", "1e5", "True", "False", "Tru", " ", ", ", ": ", ":", "\r",
     "a", "/", "\x00", "é", "\ufffd", "]", "[", " TP0", " T_P12", " tp0", " TP", " TP1234567", "#token", "x" * 9,
     "9" * 18, "9" * 19, "1" * 18 + ".5", "1." + "2" * 19]
)


def _mutations(line: str) -> st.SearchStrategy[str]:
    cut = st.integers(0, len(line))
    return st.builds(
        lambda start, length, noise, twice: line[:start] + noise + line[start + length :] + (noise if twice else ""),
        cut, st.integers(0, 4), NOISE, st.booleans(),
    )


LINES = st.one_of([_mutations(line) for _, line in SHAPE_LINES] + [st.text(max_size=80)])


def _regex_rows(shape: Shape, lines: pa.Array) -> np.ndarray:
    return np.flatnonzero(pc.match_substring_regex(lines, shape.pattern).to_numpy(zero_copy_only=False))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(LINES, min_size=1, max_size=30), skip=st.integers(0, 3))
def test_matching_gives_what_the_shapes_regex_gives(lines: list[str], skip: int) -> None:
    lines = [line.replace("\n", " ") for line in lines]
    array = pa.array(["x"] * skip + lines, pa.string()).slice(skip)  # an array at an offset, as a block's rest is
    split = Split(array)
    for shape in SHAPES:
        rows, values = split.matching(shape, np.arange(len(lines)))
        assert rows.tolist() == _regex_rows(shape, array).tolist()
        for at, row in enumerate(rows.tolist()):
            match = shape.regex.fullmatch(lines[row])
            assert match is not None
            got = [split.data[starts[at] : ends[at]].tobytes().decode() for starts, ends in values]
            assert got == [match[f"v{index}"] for index in range(len(values))]


def test_a_colon_ending_a_line_and_a_space_opening_the_next_are_no_separator() -> None:
    line = SHAPE_LINES[0][1]
    lines = pa.array([line.replace("#token: ", "#token:"), " " + line[: line.index("#token")]], pa.string())
    rows, _ = Split(lines).matching(SHAPES[0], np.arange(2))
    assert rows.tolist() == _regex_rows(SHAPES[0], lines).tolist() == []


def test_every_bench_shape_line_matches_and_only_its_kind() -> None:
    lines = pa.array([line for _, line in SHAPE_LINES], pa.string())
    split = Split(lines)
    for index, shape in enumerate(SHAPES):
        assert split.matching(shape, np.arange(len(SHAPE_LINES)))[0].tolist() == [index]
