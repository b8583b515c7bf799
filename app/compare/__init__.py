"""Comparing runs on their steady state: window detection, time-weighted statistics, the table.

Modules: grid (time-weighting), steady (warm-up cut), stats (bootstrap), runstats (one run from the
store), table (the comparison dict), render (Markdown, CSV), report (entry points), offline (logs).
"""

from __future__ import annotations

from kvwatch.app.compare.report import NothingStored, compare_runs, overlay, parse_window, render
from kvwatch.app.compare.runstats import RunStats, compute_run_stats
from kvwatch.app.config.compare import DEFAULT_MIN_STEADY_S

__all__ = [
    "DEFAULT_MIN_STEADY_S",
    "NothingStored",
    "RunStats",
    "compare_runs",
    "compute_run_stats",
    "overlay",
    "parse_window",
    "render",
]
