"""One run's steady window and its statistics, read from the store."""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field, replace

import numpy as np

from kvwatch.app.compare.grid import FloatArray, grid_step, on_grid
from kvwatch.app.compare.stats import Summary, summarize_level, summarize_rate
from kvwatch.app.compare.steady import STEADY_METRICS, SteadyWindow, find_window, manual_window
from kvwatch.app.config.compare import DEFAULT_MIN_STEADY_S  # the default of [hosts.compare]
from kvwatch.app.metrics_catalog import describe
from kvwatch.app.metrics_catalog.names import CLIENT_DONE, COMPLETION_RATE, COMPLETIONS, NEW_SEQ
from kvwatch.app.runs.model import Run
from kvwatch.app.store.base import Store
from kvwatch.app.store.coverage import SeriesWindow, read_window

MIN_WINDOW_POINTS = 20
# Where completions per second come from, best first: the output files (what was actually persisted),
# the client's progress bar, then admissions (prefill #new-seq less retracted requests, which are
# admitted again), which equal completions in steady state.
RATE_SOURCES = (
    (COMPLETIONS, "output files"),
    (CLIENT_DONE, "client progress"),
    (NEW_SEQ, "admissions (prefill #new-seq less retractions)"),
)
SOURCE_NAMES = dict(RATE_SOURCES)
EVENT_LIMIT = 1_000_000
NOT_ENOUGH_YET = "not enough steady data yet"  # a live run: more may come
NOT_ENOUGH_ENDED = "not enough steady data (the run has ended)"
NOTHING_LEFT = "no samples stored for this run: neither raw samples nor rollups cover its window"


def ended_message(message: str) -> str:
    """The steady-window message of an ended run: nothing more will come, so no "yet"."""
    return message.replace(NOT_ENOUGH_YET, NOT_ENOUGH_ENDED).replace("in this run yet", "in this run")


def _ended(run: Run) -> bool:
    return run.ended_at is not None or run.failed_at is not None


@dataclass(slots=True)
class RunStats:
    run: Run
    window: SteadyWindow
    step: float
    end: float
    levels: dict[str, Summary] = field(default_factory=dict)
    rate: Summary | None = None
    rate_source: str | None = None
    # The RATE_SOURCES metrics that moved inside the steady window: compare picks one all runs have.
    rate_sources: list[str] = field(default_factory=list)
    # Per level metric: what the host series combines, in the metric catalog's words ("sum over 4 DP ranks").
    combine: dict[str, str] = field(default_factory=dict)
    # Per metric (and "completion_rate"): data before this time came from 10 s rollup buckets, because
    # retention pruned the raw samples (app/store/coverage.py); -inf: raw samples throughout.
    rollup_until: dict[str, float] = field(default_factory=dict)

    def rollup_share(self, metric: str) -> float:
        """The part of the steady window (0..1) whose `metric` was read from rollup buckets."""
        edge = self.rollup_until.get(metric, -math.inf)
        if self.window.duration <= 0:
            return 0.0
        return float(min(max((edge - self.window.start) / self.window.duration, 0.0), 1.0))



def read_levels(store: Store, run: Run) -> tuple[dict[str, SeriesWindow], float]:
    """The run's steady metrics (10 s bucket means where raw samples were pruned), and where its data
    stops: its end, its failure, or (a live run) its latest sample."""
    bounds = [x for x in (run.ended_at, run.failed_at) if x is not None]
    until = min(bounds) if bounds else None
    series = {m: read_window(store, run.host, m, since=run.started_at, until=until) for m in STEADY_METRICS}
    last = [float(w.t[-1]) for w in series.values() if not w.empty]
    end = max(last) if last else (until if until is not None else run.started_at)
    return series, end


def _retracted(store: Store, run: Run, end: float) -> tuple[FloatArray, FloatArray]:
    """Requests sent back to the queue; each TP rank of a DP group logs the same line: count it once."""
    seen: set[tuple[object, ...]] = set()
    times, counts = [], []
    for event in store.events(run.host, kinds=("event",), since=run.started_at, limit=EVENT_LIMIT):
        if event.get("event") != "retract" or event["t"] > end:
            continue
        key = (event["t"], (event.get("tags") or {}).get("DP"), event.get("message"))
        if key not in seen and isinstance(event.get("retracted_reqs"), int | float):
            seen.add(key)
            times.append(float(event["t"]))
            counts.append(float(event["retracted_reqs"]))
    return np.asarray(times, dtype=np.float64), np.asarray(counts, dtype=np.float64)


def _admissions(store: Store, run: Run, end: float) -> tuple[FloatArray, FloatArray, float]:
    """Cumulative admissions net of retractions: a retracted request is admitted again later."""
    # With DP attention each DP rank admits on its own: sum the ranks' own lines, since the host series
    # of a DP log holds the sum of each rank's latest batch, not a count of admissions. A pruned part
    # counts each 10 s bucket's sum at the bucket's start.
    ranks = [r for r in store.ranks(run.host, NEW_SEQ) if r] or [""]
    parts = [read_window(store, run.host, NEW_SEQ, rank=rank, since=run.started_at, until=end) for rank in ranks]
    rt, rv = _retracted(store, run, end)
    times = np.concatenate([p.t for p in parts] + [rt])
    order = np.argsort(times, kind="stable")
    counts = np.cumsum(np.concatenate([p.sums() for p in parts] + [-rv])[order])
    return times[order], counts, max(p.raw_from for p in parts)


def moved_sources(store: Store, run: Run, window: SteadyWindow) -> list[str]:
    """The RATE_SOURCES metrics that counted at least twice inside the window (output files read all
    at once, after the fact, say nothing about when their lines were written), best first."""
    found = []
    for metric, _ in RATE_SOURCES:
        read = read_window(store, run.host, metric, since=run.started_at, until=window.end)
        if np.count_nonzero(read.t >= window.start) >= 2:
            found.append(metric)
    return found


def _cumulative(
    store: Store, run: Run, window: SteadyWindow, metric: str,
) -> tuple[FloatArray, FloatArray, str, float]:
    """The count `metric` over the run up to the window's end, its source's name, where its rollup part ends."""
    end = window.end
    if metric == NEW_SEQ:
        times, counts, edge = _admissions(store, run, end)
        return times, counts, SOURCE_NAMES[metric], edge
    read = read_window(store, run.host, metric, since=run.started_at, until=end)
    return read.t, read.v, SOURCE_NAMES[metric], read.raw_from


def choose_window(
    grids: dict[str, FloatArray],
    run: Run,
    end: float,
    step: float,
    manual: tuple[float, float | None] | None,
    min_steady_s: float,
) -> SteadyWindow:
    if manual is None:
        window = find_window(grids, run.started_at, end, step, min_steady_s)
    else:
        high = end if manual[1] is None else min(run.started_at + manual[1], end)
        window = manual_window(run.started_at + manual[0], high, min_steady_s)
    points = int((window.end - window.start) // step)
    if window.ok and points < MIN_WINDOW_POINTS:
        message = f"not enough steady data yet: {points} samples in the window"
        return SteadyWindow(window.start, window.end, "too_short", window.auto, message, window.cuts)
    return window


def compute_run_stats(
    store: Store,
    run: Run,
    manual: tuple[float, float | None] | None = None,
    min_steady_s: float = DEFAULT_MIN_STEADY_S,
) -> RunStats:
    """`manual` = (from, to) in seconds after the run's start (to None: the end) overrides the detection."""
    series, end = read_levels(store, run)
    times = next((w.t for w in series.values() if not w.empty), np.empty(0))
    step = grid_step(times, run.started_at, end)
    grids = {m: on_grid(w.t, w.v, run.started_at, end, step) for m, w in series.items() if not w.empty}
    window = choose_window(grids, run, end, step, manual, min_steady_s)
    if not grids and _ended(run):
        window = replace(window, status="no_data", message=NOTHING_LEFT)
    elif _ended(run):  # an ended run's window will not grow: no "yet"
        window = replace(window, message=ended_message(window.message))
    stats = RunStats(run, window, step, end)
    stats.combine = {m: describe(m, store.ranks(run.host, m))["label"] for m in STEADY_METRICS}
    stats.rollup_until = {m: w.raw_from for m, w in series.items() if not w.empty}
    if not stats.window.ok:
        return stats
    rng = np.random.default_rng(zlib.crc32(run.id.encode()))
    first = int((stats.window.start - run.started_at) // step)
    last = int((stats.window.end - run.started_at) // step)
    for metric, grid in grids.items():
        part = grid[first:last]
        if np.count_nonzero(~np.isnan(part)) >= MIN_WINDOW_POINTS:
            stats.levels[metric] = summarize_level(part, rng)
    stats.rate_sources = moved_sources(store, run, stats.window)
    if stats.rate_sources:
        use_rate_source(store, stats, stats.rate_sources[0])
    return stats


def use_rate_source(store: Store, stats: RunStats, metric: str) -> None:
    """Completions per second of the steady window from one RATE_SOURCES count (`metric`); none if
    that count has too few points in the window."""
    rng = np.random.default_rng(zlib.crc32(f"{stats.run.id}:{metric}".encode()))
    times, values, source, edge = _cumulative(store, stats.run, stats.window, metric)
    counts = on_grid(times, values, stats.window.start, stats.window.end, stats.step)
    stats.rate, stats.rate_source = None, None
    stats.rollup_until.pop(COMPLETION_RATE, None)
    if np.count_nonzero(~np.isnan(counts)) >= MIN_WINDOW_POINTS:
        stats.rate, stats.rate_source = summarize_rate(counts, stats.step, rng), source
        stats.rollup_until[COMPLETION_RATE] = edge
