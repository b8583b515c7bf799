"""What a run report shows, read from the store for one host and one time window."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from tsdownsample import MinMaxLTTBDownsampler

from kvwatch.app.metrics_catalog import describe
from kvwatch.app.metrics_catalog.names import (
    COMPLETIONS,
    GEN_THROUGHPUT,
    GPU_MEM_USED_MIB,
    GPU_UTIL_PCT,
    INPUT_THROUGHPUT,
    QUEUE_REQ,
    RUNNING_REQ,
    TOKEN,
    TOKEN_USAGE,
)
from kvwatch.app.report.events import EventGroup, RunSummary, collapse
from kvwatch.app.store.base import Store
from kvwatch.app.store.coverage import SeriesWindow, read_window

FloatArray = npt.NDArray[np.float64]
MAX_POINTS = 2000  # per series: enough for a full-width chart, small enough to mail
SUMMARY_METRICS = (
    TOKEN_USAGE, RUNNING_REQ, QUEUE_REQ, GEN_THROUGHPUT, INPUT_THROUGHPUT, TOKEN,
    COMPLETIONS, GPU_UTIL_PCT, GPU_MEM_USED_MIB,
)
EVENT_LIMIT = 100_000
RECENT_EVENTS = 30  # raw events kept in `recent_events`, and collapsed groups shown


@dataclass(frozen=True, slots=True)
class Window:
    since: float | None = None
    until: float | None = None
    label: str = "whole history"

    def contains(self, t: float) -> bool:
        return (self.since is None or t > self.since) and (self.until is None or t <= self.until)


@dataclass(slots=True)
class ReportData:
    host: str
    window: Window
    generated_at: float
    series: dict[str, tuple[FloatArray, FloatArray]] = field(default_factory=dict)
    summary: list[dict[str, Any]] = field(default_factory=list)
    event_counts: dict[str, int] = field(default_factory=dict)
    recent_events: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)  # every event of the window, in time order
    event_groups: list[EventGroup] = field(default_factory=list)  # the latest, repeats collapsed
    runs: list[RunSummary] = field(default_factory=list)  # the runs the window overlaps
    facts: dict[str, Any] = field(default_factory=dict)  # run flags and capacity, when known
    comparison: dict[str, Any] | None = None
    campaigns: list[dict[str, Any]] = field(default_factory=list)  # app/campaign's views, oldest first
    run_starts: list[tuple[float, str]] = field(default_factory=list)  # (t, run id): marked on the charts
    # Per metric: how many of its points are 10 s rollup buckets (raw samples pruned by retention).
    rollup_points: dict[str, int] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.series

    @property
    def first_t(self) -> float | None:
        return min((float(t[0]) for t, _ in self.series.values()), default=self.window.since)

    @property
    def last_t(self) -> float | None:
        return max((float(t[-1]) for t, _ in self.series.values()), default=self.window.until)


def summarize(metric: str, read: SeriesWindow) -> dict[str, Any]:
    """Plain sample statistics of one series in the window (the compare table has the steady-state ones).
    Over a pruned part the median and p5/p95 are of 10 s bucket means (an approximation); `max` stays
    exact (each bucket keeps its maximum), and `points` counts buckets as one each."""
    v = read.v
    p5, median, p95 = np.percentile(v, [5, 50, 95])
    return {"metric": metric, "points": len(v), "last": float(v[-1]), "median": float(median),
            "p5": float(p5), "p95": float(p95), "max": float(read.vmax.max()),
            "resolution_s": read.resolution_s, "rollup_points": int(read.from_rollup.sum())}


def downsample(t: FloatArray, v: FloatArray, n: int = MAX_POINTS) -> tuple[FloatArray, FloatArray]:
    if len(t) > n:
        index = MinMaxLTTBDownsampler().downsample(t, v, n_out=n)  # type: ignore[no-untyped-call]
        t, v = t[index], v[index]
    return break_gaps(t, v)


def break_gaps(t: FloatArray, v: FloatArray, factor: float = 20.0) -> tuple[FloatArray, FloatArray]:
    """A NaN after each silence much longer than the usual step, so a chart does not draw a line across
    a restart or an outage as if the server had been running."""
    if len(t) < 3:
        return t, v
    steps = np.diff(t)
    gaps = np.flatnonzero(steps > factor * max(float(np.median(steps)), 1e-9)) + 1
    if not len(gaps):
        return t, v
    return np.insert(t, gaps, t[gaps - 1] + steps[gaps - 1] / 2), np.insert(v, gaps, np.nan)


def gather(store: Store, host: str, window: Window) -> ReportData:
    data = ReportData(host=host, window=window, generated_at=time.time())
    for metric in store.metrics(host):
        read = read_window(store, host, metric, since=window.since, until=window.until)
        if read.empty:
            continue
        data.series[metric] = downsample(read.t, read.v)
        if read.resolution_s:
            data.rollup_points[metric] = int(read.from_rollup.sum())
        if metric in SUMMARY_METRICS:
            row = summarize(metric, read)
            row["combine"] = describe(metric, store.ranks(host, metric))["label"]  # "sum over 4 DP ranks"
            data.summary.append(row)
    data.summary.sort(key=lambda row: SUMMARY_METRICS.index(row["metric"]))
    events = [e for e in store.events(host, kinds=("event",), since=window.since, limit=EVENT_LIMIT)
              if window.contains(float(e["t"]))]
    data.event_counts = dict(Counter(str(e.get("event", "?")) for e in events).most_common())
    data.recent_events = events[-RECENT_EVENTS:]
    data.events = events
    data.event_groups = collapse(events)[-RECENT_EVENTS:]
    return data
