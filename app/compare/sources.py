"""One completion-rate source for every compared run, and words that never promise more data from a
run that has ended.

A rate from output files and one from admissions are not the same quantity (issue #16: one run's
rate from admissions against another's from its output files read +290 %, the wrong direction), so
compare uses the best source every run has: output files, else client progress, else admissions.
"""

from __future__ import annotations

from collections.abc import Sequence

from kvwatch.app.compare.runstats import (
    NOT_ENOUGH_ENDED,
    NOT_ENOUGH_YET,
    RATE_SOURCES,
    SOURCE_NAMES,
    RunStats,
    use_rate_source,
)
from kvwatch.app.store.base import Store


def common_source(available: Sequence[Sequence[str]]) -> str | None:
    """The best RATE_SOURCES metric that every run's list holds; None when there is none (or no run)."""
    if not available:
        return None
    return next((m for m, _ in RATE_SOURCES if all(m in runs for runs in available)), None)


def align_rate_sources(store: Store, stats: Sequence[RunStats]) -> str | None:
    """Recompute each run's completion rate from the common source; the runs that have no source at
    all (no steady window) do not veto it. Returns the common source's name, None when there is none
    and each run keeps its own best (the table then refuses to compute changes across sources)."""
    judged = [s for s in stats if s.window.ok and s.rate_sources]
    common = common_source([s.rate_sources for s in judged])
    if common is None:
        return None
    for s in judged:
        if s.rate_source != SOURCE_NAMES[common]:
            use_rate_source(store, s, common)
    return SOURCE_NAMES[common]


def status_text(status: str, ended: bool) -> str:
    """A table cell without a value: why, in words that fit whether the run is still going."""
    if status == "no_data":
        return "no data"
    if status in ("settling", "too_short"):
        return NOT_ENOUGH_ENDED if ended else NOT_ENOUGH_YET
    return "n/a"
