"""A host's `[hosts.compare]` table: `min_steady`, the shortest automatic steady window (default 5 min).

A short demo (minutes, not hours) sets a shorter one; the page shows the minimum in force and lets a
person change it for one comparison (`min_steady` on /api/compare).
"""

from __future__ import annotations

from typing import Any

from kvwatch.app.alerts.rules import parse_duration
from kvwatch.app.compare.runstats import DEFAULT_MIN_STEADY_S
from kvwatch.app.config import Config
from kvwatch.app.errors import ConfigError

KEYS = frozenset({"min_steady"})


def host_min_steady(config: Config, host: str) -> float:
    """The configured minimum for `host`'s runs, or the default."""
    entry = next((h for h in config.hosts if h.name == host), None)
    table: Any = {} if entry is None else entry.tables.get("compare", {})
    label = f"{config.path}: hosts[{host!r}].compare"
    if not isinstance(table, dict):
        raise ConfigError(f"{label}: expected a table")
    unknown = set(table) - KEYS
    if unknown:
        raise ConfigError(f"{label}.{sorted(unknown)[0]}: unknown setting (allowed: min_steady)")
    if "min_steady" not in table:
        return DEFAULT_MIN_STEADY_S
    return parse_duration(table["min_steady"], f"{label}.min_steady")
