"""docs/config.md lists every key of kvwatch.toml with its default, and nothing the code does not read."""

from __future__ import annotations

import re
from pathlib import Path

from kvwatch.app.config.tables import Table
from tests.docs.config_tables import NOT_TABLES, TABLES, TOP_LEVEL, rows

DOC = (Path(__file__).resolve().parents[2] / "docs" / "config.md").read_text()
HEADING = re.compile(r"^## `(\[.+?\])`$", re.MULTILINE)
ROW = re.compile(r"^\| `([\w-]+)` \| `([^`]*)` \|", re.MULTILINE)


def documented() -> dict[str, dict[str, str]]:
    """heading -> {key: default as written}"""
    parts = HEADING.split(DOC)
    return {heading: dict(ROW.findall(body)) for heading, body in zip(parts[1::2], parts[2::2], strict=True)}


def test_every_table_is_documented_and_no_other() -> None:
    assert sorted(documented()) == sorted(TABLES)


def test_every_key_and_its_default_is_as_the_code_reads_it() -> None:
    doc = documented()
    for heading, (model, nested) in TABLES.items():
        assert doc[heading] == rows(model, nested), heading


def test_every_host_sub_table_is_named() -> None:
    model, nested = TABLES["[[hosts]]"]
    assert nested <= set(model.keys())
    for key in nested:
        assert f"[hosts.{key}" in DOC or f"[[hosts.{key}]]" in DOC, key


def test_every_top_level_key_has_a_section() -> None:
    headings = {h.strip("[]").split(".")[0] for h in documented()}
    assert set(TOP_LEVEL.keys()) <= headings
    assert f"`{'`, `'.join(TOP_LEVEL.keys()[:-1])}` and `{TOP_LEVEL.keys()[-1]}`" in DOC


def test_every_table_model_is_listed() -> None:
    """A new Table subclass (a new kvwatch.toml table) must be added to tests/docs/config_tables.py."""
    import kvwatch.app.alerts.rules
    import kvwatch.app.config
    import kvwatch.app.controller.policy  # noqa: F401

    def subclasses(cls: type[Table]) -> set[type[Table]]:
        return {sub for direct in cls.__subclasses__() for sub in {direct, *subclasses(direct)}}

    listed = {model for model, _ in TABLES.values()} | {TOP_LEVEL} | NOT_TABLES
    bases = {cls for model in listed for cls in model.__mro__}
    assert {cls for cls in subclasses(Table) if not cls.__module__.startswith("tests.")} <= listed | bases
