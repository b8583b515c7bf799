"""`[hosts.compare]`: `min_steady`, the host's one steady minimum (app/compare/settings.py says who
judges by it)."""

from __future__ import annotations

from typing import ClassVar

from kvwatch.app.config.tables import Duration, Table

DEFAULT_MIN_STEADY_S = 300.0  # a steady window shorter than this is too short to compare on


class CompareTable(Table):
    unknown: ClassVar[str] = ".{key}: unknown setting (allowed: {allowed})"
    min_steady: Duration = DEFAULT_MIN_STEADY_S
