"""Rollup buckets: the coarse copies of every series that keep wide windows fast.

Each bucket keeps count, sum, and the min and max samples with their times, so a rolled-up window
can still be drawn with its extremes at the moments they happened. Buckets merge by upsert, so
samples may arrive in any order and in any number of batches.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from kvwatch.app.store.base import Sample

ROLLUP_WIDTHS: tuple[int, ...] = (10, 60, 600)  # seconds; a month at 600 s is 4,320 buckets

# Columns in table order after (host, metric, rank, width, bucket).
BucketRow = tuple[str, str, str, int, float, int, float, float, float, float, float, float, float]

UPSERT_ROLLUP = """
INSERT INTO samples_rollup (host, metric, rank, width, bucket, n, vsum, tmin, vmin, tmax, vmax, tlast, vlast)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (host, metric, rank, width, bucket) DO UPDATE SET
  n = samples_rollup.n + excluded.n,
  vsum = samples_rollup.vsum + excluded.vsum,
  tmin = CASE WHEN excluded.vmin < samples_rollup.vmin THEN excluded.tmin ELSE samples_rollup.tmin END,
  vmin = CASE WHEN excluded.vmin < samples_rollup.vmin THEN excluded.vmin ELSE samples_rollup.vmin END,
  tmax = CASE WHEN excluded.vmax > samples_rollup.vmax THEN excluded.tmax ELSE samples_rollup.tmax END,
  vmax = CASE WHEN excluded.vmax > samples_rollup.vmax THEN excluded.vmax ELSE samples_rollup.vmax END,
  tlast = CASE WHEN excluded.tlast >= samples_rollup.tlast THEN excluded.tlast ELSE samples_rollup.tlast END,
  vlast = CASE WHEN excluded.tlast >= samples_rollup.tlast THEN excluded.vlast ELSE samples_rollup.vlast END
"""


def bucket_rows(host: str, samples: Iterable[Sample]) -> list[BucketRow]:
    """Samples folded into one row per (metric, rank, width, bucket), ready for UPSERT_ROLLUP."""
    acc: dict[tuple[str, str, int, float], list[float]] = {}
    for metric, rank, t, v in samples:
        if not math.isfinite(v):
            continue
        for width in ROLLUP_WIDTHS:
            key = (metric, rank, width, math.floor(t / width) * width)
            row = acc.get(key)
            if row is None:
                acc[key] = [1, v, t, v, t, v, t, v]
                continue
            row[0] += 1
            row[1] += v
            if v < row[3]:
                row[2], row[3] = t, v
            if v > row[5]:
                row[4], row[5] = t, v
            if t >= row[6]:
                row[6], row[7] = t, v
    return [
        (host, metric, rank, width, float(bucket), int(r[0]), r[1], r[2], r[3], r[4], r[5], r[6], r[7])
        for (metric, rank, width, bucket), r in acc.items()
    ]


def rollup_points(
    table: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Rows (tmin, vmin, tmax, vmax) in bucket order -> the min and max samples in time order."""
    if not len(table):
        return np.empty(0), np.empty(0)
    tmin, vmin, tmax, vmax = table.T
    min_first = tmin <= tmax
    first_t = np.where(min_first, tmin, tmax)
    first_v = np.where(min_first, vmin, vmax)
    second_t = np.where(min_first, tmax, tmin)
    second_v = np.where(min_first, vmax, vmin)
    t = np.column_stack((first_t, second_t)).ravel()
    v = np.column_stack((first_v, second_v)).ravel()
    keep = np.ones(len(t), dtype=bool)
    keep[1::2] = first_t != second_t  # a bucket whose min and max are one sample gives one point
    return np.ascontiguousarray(t[keep]), np.ascontiguousarray(v[keep])


def choose_width(window_s: float, max_points: int) -> int | None:
    """The coarsest rollup still giving at least `max_points` buckets over the window; None = raw."""
    for width in reversed(ROLLUP_WIDTHS):
        if window_s / width >= max_points:
            return width
    return None
