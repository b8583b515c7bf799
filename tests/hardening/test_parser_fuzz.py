"""Mutation fuzzing of every parser (parsers.PARSERS) for a fixed, derandomized budget: real log lines
from the golden cases, cut, spliced, repeated and salted with hostile bytes. No exception, and every
record stays JSON with finite numbers. The parsers' own logic is called without feed()'s safety net."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvwatch.parsers import PARSERS, create_parser

CASES = Path(__file__).resolve().parent.parent / "parsers" / "cases"
CORPUS = sorted({line for path in CASES.glob("*/*/input.log")
                 for line in path.read_text(errors="replace").splitlines() if line.strip()})
EXAMPLES = 250
SALT = ["\x00", "\r", "\ufeff", "\ufffd", "\u2028", "%", "nan", "inf", "-0", "1e999", "9" * 400, "((((((((",
        "#running-req: ", "token usage: ", ", ", ": ", "[", "]", "=", '"', "{", "}", " TP", " DP", "|", "/"]
FED: dict[str, int] = {}


@st.composite
def mutated(draw: st.DrawFn) -> str:
    line: str = draw(st.sampled_from(CORPUS))
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(line)))
        action = draw(st.sampled_from(["cut", "insert", "splice", "repeat", "drop"]))
        if action == "cut":
            line = line[:at]
        elif action == "insert":
            line = line[:at] + draw(st.one_of(st.sampled_from(SALT), st.text(max_size=8))) + line[at:]
        elif action == "splice":
            other: str = draw(st.sampled_from(CORPUS))
            line = line[:at] + other[draw(st.integers(0, len(other))):]
        elif action == "repeat":
            line = line[:at] * draw(st.integers(2, 50)) + line[at:]
        else:
            line = line[:at] + line[at + draw(st.integers(1, 10)):]
    return line


def feed(parser: Any, line_no: int, text: str) -> list[dict[str, Any]]:
    inner = getattr(parser, "_feed", None)
    if inner is not None:
        parser.health.lines += 1
        return inner(line_no, text)  # type: ignore[no-any-return]
    return parser.feed(line_no, text)  # type: ignore[no-any-return]


@pytest.mark.parametrize("source", sorted(PARSERS))
def test_no_parser_raises_on_mutated_real_lines(source: str) -> None:
    assert len(CORPUS) > 100

    @settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(lines=st.lists(mutated(), min_size=1, max_size=30))
    def run(lines: list[str]) -> None:
        parser = create_parser(source, file="out.jsonl") if source == "outputs" else create_parser(source)
        records = []
        for line_no, text in enumerate(lines, 1):
            records += feed(parser, line_no, text)
        records += parser.flush()
        json.dumps(records, allow_nan=False)
        FED[source] = FED.get(source, 0) + len(lines)

    run()
    print(f"\nfuzz {source}: {EXAMPLES} cases, {FED[source]} lines")
