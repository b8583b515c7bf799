"""Choosing and thinning a series' points: rollup buckets for wide windows, raw samples for narrow
ones, then MinMaxLTTB (tsdownsample) down to `max_points` with the extremes kept."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import numpy as np
import numpy.typing as npt
from tsdownsample import MinMaxLTTBDownsampler

from kvwatch.app.errors import UnknownRun
from kvwatch.app.store.base import Store
from kvwatch.app.store.coverage import raw_edge
from kvwatch.app.store.rollup import ROLLUP_WIDTHS, choose_width

Arrays = tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]


def window_of(store: Store, host: str, metric: str, rank: str,
              since: float | None, until: float | None) -> tuple[float, float] | None:
    """The window actually asked for: open ends closed by the series' first and last samples."""
    if since is not None and until is not None:
        return since, until
    extent = store.extent(host, metric, rank)
    if extent is None:
        return None
    return (since if since is not None else extent[0]), (until if until is not None else extent[1])


def read_points(
    store: Store, host: str, metric: str, *, rank: str = "", since: float | None = None,
    until: float | None = None, max_points: int = 2000, use_rollup: bool = True,
) -> tuple[Arrays, int | None]:
    """The window's points (rollup or raw) and the rollup width used (None: raw samples)."""
    width = None
    if use_rollup:
        window = window_of(store, host, metric, rank, since, until)
        if window is not None:
            width = choose_width(window[1] - window[0], max_points)
    if width is None:
        return _raw_or_finest(store, host, metric, rank, since, until)
    return store.rollup(host, metric, width, rank=rank, since=since, until=until), width


def _raw_or_finest(
    store: Store, host: str, metric: str, rank: str, since: float | None, until: float | None,
) -> tuple[Arrays, int | None]:
    """Raw samples; where retention has pruned them (before the first one kept), the finest rollup's
    min and max samples (app/store/coverage.py decides where that is, for compare and export too)."""
    t, v = store.series(host, metric, rank=rank, since=since, until=until)
    first = raw_edge(store, host, metric, rank, since)
    if first is None:
        return (t, v), None
    cap = until if math.isinf(first) else (first if until is None else min(first, until))
    width = ROLLUP_WIDTHS[0]
    old_t, old_v = store.rollup(host, metric, width, rank=rank, since=since, until=cap)
    older = old_t < first
    if not older.any():
        return (t, v), None
    return (np.concatenate((old_t[older], t)), np.concatenate((old_v[older], v))), width


def downsample(t: npt.NDArray[np.float64], v: npt.NDArray[np.float64], max_points: int) -> Arrays:
    if len(t) <= max_points:
        return t, v
    index = MinMaxLTTBDownsampler().downsample(  # type: ignore[no-untyped-call]
        t, v, n_out=max_points)
    return t[index], v[index]


def as_pairs(t: npt.NDArray[np.float64], v: npt.NDArray[np.float64]) -> list[list[float]]:
    finite = np.isfinite(v)
    if not finite.all():
        t, v = t[finite], v[finite]
    return np.column_stack((t, v)).tolist() if len(t) else []


def run_window(store: Store, host: str, run: str) -> tuple[float, float | None]:
    """A run's [started_at, ended_at] from the runs the run tracker keeps as `run` documents."""
    for doc in store.documents("run", host=host):
        data = doc["data"]
        if run in (doc["key"], str(data.get("id", ""))):
            start = _epoch(data.get("started_at"))
            if start is None:
                break
            return start, _epoch(data.get("ended_at"))
    raise UnknownRun(f"unknown run {run!r} for host {host!r}")


def _epoch(value: Any) -> float | None:
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value:
        parsed = dt.datetime.fromisoformat(value)
        return (parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)).timestamp()
    return None
