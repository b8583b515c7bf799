"""The page's chart table (static/panels.js's PANELS) and the catalog's `chart` field say the same:
every metric a chart draws is catalogued on that chart, and every catalogued chart metric is drawn."""

from __future__ import annotations

import re
from pathlib import Path

from kvwatch.app.metrics_catalog import CATALOG

PANELS_JS = Path(__file__).resolve().parents[2] / "static" / "panels.js"


def page_charts(source: str) -> dict[str, set[str]]:
    """{chart id: metrics of its traces}, read from the PANELS table's `id:` and `metric:` keys."""
    table = source.split("export const PANELS = [", 1)[1].split("\n];", 1)[0]
    charts: dict[str, set[str]] = {}
    current = None
    for key, value in re.findall(r'\b(id|metric): "([^"]+)"', table):
        if key == "id":
            current = value
            charts[current] = set()
        elif current is not None:
            charts[current].add(value)
    return charts


def test_the_page_draws_what_the_catalog_puts_on_each_chart() -> None:
    drawn = page_charts(PANELS_JS.read_text(encoding="utf-8"))
    catalogued: dict[str, set[str]] = {}
    for entry in CATALOG.values():
        if entry.chart is not None:
            catalogued.setdefault(entry.chart, set()).add(entry.name)
    assert drawn == catalogued


def test_the_table_reader_sees_ids_and_metrics() -> None:
    source = ('export const PANELS = [\n  { id: "a", traces: [{ metric: "x" }, { metric: "y" }] },\n'
              '  { id: "b", traces: [] },\n];')
    assert page_charts(source) == {"a": {"x", "y"}, "b": set()}
