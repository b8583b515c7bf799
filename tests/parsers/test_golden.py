"""Golden cases: tests/parsers/cases/<parser>/<case>/input.log -> expected.jsonl (+ health.json).

Inputs are built from the format strings per release in reference/sglang-and-vllm-log-formats.md.
`UPDATE_GOLDEN=1` rewrites the expected files from the current parsers (review the diff!).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kvwatch.parsers import PARSERS, create_parser

CASES = Path(__file__).parent / "cases"


def _cases() -> list[Path]:
    return sorted(path.parent for path in CASES.glob("*/*/input.log"))


def run_case(case: Path) -> tuple[list[dict], dict]:
    parser = create_parser(case.parent.name, file="input.log")
    text = (case / "input.log").read_bytes().decode("utf-8", "replace")
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    records = []
    for line_no, line in enumerate(lines, 1):
        records += parser.feed(line_no, line.removesuffix("\r"))
    records += parser.flush()
    return json.loads(json.dumps(records)), parser.health.as_dict()


@pytest.mark.parametrize("case", _cases(), ids=lambda path: f"{path.parent.name}/{path.name}")
def test_golden_case(case: Path) -> None:
    records, health = run_case(case)
    expected_path, health_path = case / "expected.jsonl", case / "health.json"
    if os.environ.get("UPDATE_GOLDEN"):
        expected_path.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records))
        health_path.write_text(json.dumps(health) + "\n")
    expected = [json.loads(line) for line in expected_path.read_text().splitlines()]
    assert records == expected
    assert health == json.loads(health_path.read_text())
    assert health["lines"] == len((case / "input.log").read_bytes().rstrip(b"\n").split(b"\n"))


def test_every_parser_has_a_golden_case() -> None:
    for name in PARSERS:
        assert any((CASES / name).glob("*/input.log")), f"no golden case for parser {name!r}"
