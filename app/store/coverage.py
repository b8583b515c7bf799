"""Reading one series over a window whether or not retention pruned its raw samples.

Retention (app/pipeline/retention.py) deletes a series' oldest raw samples and keeps its rollups, so a
window that starts before the first raw sample still kept is answered in two parts: the pruned part
from the finest (10 s) rollup, the rest from the raw samples. `raw_edge` is that one decision, shared by
the charts (`/api/series`, which draws a bucket's min and max samples) and by compare, export and
report (`read_window`, which takes a bucket's mean: the rollup stores each bucket's count and sum, so
the mean is exact; it is a 10 s mean, not a sample).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kvwatch.app.store.base import Store
from kvwatch.app.store.rollup import ROLLUP_WIDTHS

FloatArray = npt.NDArray[np.float64]
FINEST = ROLLUP_WIDTHS[0]


def raw_edge(store: Store, host: str, metric: str, rank: str, since: float | None) -> float | None:
    """Where the series' raw samples begin when a window from `since` starts before them (what lies
    before was pruned and only the rollups hold it); `inf` when no raw sample is left at all; None when
    the raw samples cover the window."""
    first = store.raw_start(host, metric, rank)
    if first is None:
        return math.inf
    return None if since is not None and since >= first else first


@dataclass(frozen=True, slots=True)
class SeriesWindow:
    """One series in a window: the 10 s rollup buckets of its pruned part (t = the bucket's start,
    v = its mean, vmin/vmax its extremes, n its samples), then its raw samples (n = 1, vmin = vmax = v)."""

    t: FloatArray
    v: FloatArray
    vmin: FloatArray
    vmax: FloatArray
    n: FloatArray
    raw_from: float  # points before this time are rollup buckets; -inf: every point is a raw sample

    @property
    def from_rollup(self) -> npt.NDArray[np.bool_]:
        return self.t < self.raw_from

    @property
    def resolution_s(self) -> int | None:
        """FINEST when some points are rollup buckets, None when all are raw samples."""
        return FINEST if bool(self.from_rollup.any()) else None

    @property
    def empty(self) -> bool:
        return not len(self.t)

    def sums(self) -> FloatArray:
        """Each point's total: a bucket's sum, a raw sample's value (for counts such as admissions)."""
        return np.asarray(self.v * self.n, dtype=np.float64)


def read_window(
    store: Store, host: str, metric: str, rank: str = "", since: float | None = None, until: float | None = None,
) -> SeriesWindow:
    """Raw samples in (since, until]; before the first raw sample still kept, the 10 s buckets that start
    in [since, until) and end by that sample (the bucket it falls in also holds kept samples: counting it
    would count them twice, so up to 10 s at the edge are left out)."""
    t, v = store.series(host, metric, rank=rank, since=since, until=until)
    edge = raw_edge(store, host, metric, rank, since)
    buckets = np.empty((0, 5))
    if edge is not None:
        cap: float | None = None if math.isinf(edge) else float(math.floor(edge / FINEST) * FINEST)
        if until is not None:
            cap = until if cap is None else min(cap, until)
        buckets = store.buckets(host, metric, FINEST, rank=rank, since=since, until=cap)
    if not len(buckets):
        return SeriesWindow(t, v, v, v, np.ones(len(t)), -math.inf)
    start, n, total, low, high = buckets.T
    return SeriesWindow(
        np.concatenate((start, t)), np.concatenate((total / n, v)), np.concatenate((low, v)),
        np.concatenate((high, v)), np.concatenate((n, np.ones(len(t)))), float(start[-1]) + FINEST,
    )
