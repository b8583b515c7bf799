"""The metric catalog (entries), the pure rules that combine a host's parts (combine), and the words
that say what a host series shows (labels). See entries.py for the rules themselves."""

from __future__ import annotations

from kvwatch.app.metrics_catalog.combine import combine, live_parts, part_kind, silence_limit
from kvwatch.app.metrics_catalog.entries import CATALOG, Extra, MetricInfo, Rule, info
from kvwatch.app.metrics_catalog.labels import catalog_help, describe, parts_of

__all__ = [
    "CATALOG",
    "Extra",
    "MetricInfo",
    "Rule",
    "catalog_help",
    "combine",
    "describe",
    "info",
    "live_parts",
    "part_kind",
    "parts_of",
    "silence_limit",
]
