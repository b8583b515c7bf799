"""One run's steady window and its statistics, read from the store."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np

from app.compare.grid import FloatArray, grid_step, on_grid
from app.compare.stats import Summary, summarize_level, summarize_rate
from app.compare.steady import STEADY_METRICS, SteadyWindow, find_window, manual_window
from app.runs.model import Run
from app.store.base import Store

DEFAULT_MIN_STEADY_S = 300.0
MIN_WINDOW_POINTS = 20
# Where completions per second come from, best first: the output files (what was actually persisted),
# the client's progress bar, then admissions (prefill #new-seq), which equal completions in steady state.
RATE_SOURCES = (
    ("completions", "output files"),
    ("client_done", "client progress"),
    ("new_seq", "admissions (prefill #new-seq)"),
)


@dataclass(slots=True)
class RunStats:
    run: Run
    window: SteadyWindow
    step: float
    end: float
    levels: dict[str, Summary] = field(default_factory=dict)
    rate: Summary | None = None
    rate_source: str | None = None


def run_end(store: Store, run: Run) -> float:
    """Where the run's data stops: its end, failure, or (live run) its latest sample."""
    bound = min(x for x in (run.ended_at, run.failed_at, float("inf")) if x is not None)
    last = [
        float(t[-1])
        for m in STEADY_METRICS
        if len(t := store.series(run.host, m, since=run.started_at, until=None if bound == float("inf") else bound)[0])
    ]
    return max(last) if last else (bound if bound != float("inf") else run.started_at)


def _cumulative(store: Store, run: Run, end: float) -> tuple[FloatArray, FloatArray, str] | None:
    for metric, source in RATE_SOURCES:
        t, v = store.series(run.host, metric, since=run.started_at, until=end)
        if len(t) >= 2:
            return (t, np.cumsum(v), source) if metric == "new_seq" else (t, v, source)
    return None


def compute_run_stats(
    store: Store,
    run: Run,
    manual: tuple[float, float | None] | None = None,
    min_steady_s: float = DEFAULT_MIN_STEADY_S,
) -> RunStats:
    """`manual` = (from, to) in seconds after the run's start (to None: the end) overrides the detection."""
    end = run_end(store, run)
    series = {m: store.series(run.host, m, since=run.started_at, until=end) for m in STEADY_METRICS}
    times = next((t for t, _ in series.values() if len(t)), np.empty(0))
    step = grid_step(times, run.started_at, end)
    grids = {m: on_grid(t, v, run.started_at, end, step) for m, (t, v) in series.items() if len(t)}
    if manual is not None:
        low = run.started_at + manual[0]
        high = end if manual[1] is None else min(run.started_at + manual[1], end)
        window = manual_window(low, high, min_steady_s)
    else:
        window = find_window(grids, run.started_at, end, step, min_steady_s)
    stats = RunStats(run, window, step, end)
    first, last = int((window.start - run.started_at) // step), int((window.end - run.started_at) // step)
    if window.ok and last - first < MIN_WINDOW_POINTS:
        stats.window = SteadyWindow(
            window.start,
            window.end,
            "too_short",
            window.auto,
            f"not enough steady data yet: {last - first} samples in the window",
        )
    if not stats.window.ok:
        return stats
    rng = np.random.default_rng(zlib.crc32(run.id.encode()))
    for metric, grid in grids.items():
        part = grid[first:last]
        if np.count_nonzero(~np.isnan(part)) >= MIN_WINDOW_POINTS:
            stats.levels[metric] = summarize_level(part, rng)
    counted = _cumulative(store, run, end)
    if counted is not None:
        counts = on_grid(counted[0], counted[1], window.start, window.end, step)
        if np.count_nonzero(~np.isnan(counts)) >= MIN_WINDOW_POINTS:
            stats.rate, stats.rate_source = summarize_rate(counts, step, rng), counted[2]
    return stats
