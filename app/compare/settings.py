"""A host's `[hosts.compare]` table: `min_steady`, the shortest automatic steady window (default 5 min).

A short demo (minutes, not hours) sets a shorter one; the page shows the minimum in force and lets a
person change it for one comparison (`min_steady` on /api/compare).
"""

from __future__ import annotations

from typing import ClassVar

from kvwatch.app.compare.runstats import DEFAULT_MIN_STEADY_S
from kvwatch.app.config import Config
from kvwatch.app.config_tables import Duration, Table, validated


class CompareTable(Table):
    unknown: ClassVar[str] = ".{key}: unknown setting (allowed: {allowed})"
    min_steady: Duration = DEFAULT_MIN_STEADY_S


def host_min_steady(config: Config, host: str) -> float:
    """The configured minimum for `host`'s runs, or the default."""
    entry = next((h for h in config.hosts if h.name == host), None)
    table = {} if entry is None else entry.tables.get("compare", {})
    return validated(CompareTable, table, f"{config.path}: hosts[{host!r}].compare").min_steady
