"""docs/records.md describes the kinds the parsers emit (as the golden cases record them), the event
names, and a naming rule whose examples hold."""

from __future__ import annotations

import json
import re
from pathlib import Path

from kvwatch.parsers.events import EVENT_PHRASES
from kvwatch.parsers.values import field_name, field_value

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "records.md").read_text()
CASES = ROOT / "tests" / "parsers" / "cases"
EXAMPLE = re.compile(r"`([^`]+)` → `([^`]+)`")


def _section(title: str) -> str:
    return DOC.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def _golden_kinds() -> set[str]:
    kinds: set[str] = set()
    for expected in CASES.rglob("expected.jsonl"):
        kinds |= {json.loads(line)["kind"] for line in expected.read_text().splitlines() if line.strip()}
    return kinds


def test_every_kind_the_golden_cases_hold_is_documented_and_no_other() -> None:
    documented = set(re.findall(r"^### `(\w+)`$", DOC, re.MULTILINE))
    assert documented == _golden_kinds()


def test_every_event_name_is_documented_and_no_other() -> None:
    event = _section("Kinds").split("### `event`\n", 1)[1].split("\n### ", 1)[0]
    assert set(re.findall(r"^- `(\w+)`:", event, re.MULTILINE)) == {name for _, name in EVENT_PHRASES}


def test_the_naming_examples_hold() -> None:
    names, values = _section("Field names and values").split("Values:", 1)
    assert len(EXAMPLE.findall(names)) >= 8
    for raw, name in EXAMPLE.findall(names):
        assert field_name(raw) == name
    assert len(EXAMPLE.findall(values)) >= 6
    for raw, value in EXAMPLE.findall(values):
        assert field_value(raw) == json.loads(value), raw
