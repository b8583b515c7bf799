"""The metric catalog (entries), the pure rules that combine a host's parts (combine), the words that
say what a host series shows (labels), and the page's charts (charts, served as `page.page_charts`).
See entries.py for the rules themselves."""

from __future__ import annotations

from kvwatch.app.metrics_catalog.charts import CHARTS, TOKEN_USAGE_HIGH, Chart, Trace
from kvwatch.app.metrics_catalog.combine import combine, live_parts, part_kind, silence_limit
from kvwatch.app.metrics_catalog.entries import CATALOG, Extra, MetricInfo, Rule, info
from kvwatch.app.metrics_catalog.labels import catalog_help, describe, parts_of
from kvwatch.app.metrics_catalog.page import page_charts

__all__ = [
    "CATALOG",
    "CHARTS",
    "TOKEN_USAGE_HIGH",
    "Chart",
    "Extra",
    "MetricInfo",
    "Rule",
    "Trace",
    "catalog_help",
    "combine",
    "describe",
    "info",
    "live_parts",
    "page_charts",
    "part_kind",
    "parts_of",
    "silence_limit",
]
