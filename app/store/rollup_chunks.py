"""Rollup chunks: a bulk batch's rollup buckets as one row per series and width, a table inside.

A catch-up of days makes over a million rollup buckets (10 s, 60 s and 600 s, for every series and
DP rank); one upserted row each was the largest part of storing a backlog. A bulk batch
(`Batch.columns`) instead writes each series' buckets of one width as one `rollup_chunks` row
holding a float64 table of BUCKET_COLUMNS. Single samples (the live path) keep upserting
`samples_rollup` rows. A reader takes both and merges a bucket that is in more than one place (the
edge buckets of consecutive batches, a live bucket a backlog also reached) as the upsert would
have: counts and sums add, min and max keep the earlier sample on ties, last keeps the newest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from kvwatch.app.store.rollup import ROLLUP_WIDTHS

F64 = npt.NDArray[np.float64]
Run = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]
BUCKET_COLUMNS = ("bucket", "n", "vsum", "tmin", "vmin", "tmax", "vmax", "tlast", "vlast")
BUCKET, N, VSUM, TMIN, VMIN, TMAX, VMAX, TLAST, VLAST = range(len(BUCKET_COLUMNS))
WIDTH = len(BUCKET_COLUMNS)
INSERT = "INSERT INTO rollup_chunks (host, metric, rank, width, b0, b1, buckets) VALUES (?, ?, ?, ?, ?, ?, ?)"
SELECT_CHUNKS = "SELECT buckets FROM rollup_chunks WHERE host = ? AND metric = ? AND rank = ? AND width = ?"
SELECT_ROWS = ("SELECT bucket, n, vsum, tmin, vmin, tmax, vmax, tlast, vlast FROM samples_rollup"
               " WHERE host = ? AND metric = ? AND rank = ? AND width = ?")


def chunk_rows(host: str, metric: str, rank: str, t: F64, v: F64) -> list[tuple[Any, ...]]:
    """One series' samples -> a rollup_chunks row per width (none when no value is finite)."""
    finite = np.isfinite(v)
    t, v = t[finite], v[finite]
    if not len(t):
        return []
    rows = []
    for width in ROLLUP_WIDTHS:
        table = bucket_table(t, v, width)
        rows.append((host, metric, rank, width, float(table[0, BUCKET]), float(table[-1, BUCKET]),
                     np.ascontiguousarray(table).tobytes()))
    return rows


def bucket_table(t: F64, v: F64, width: int) -> F64:
    """Samples -> one row of BUCKET_COLUMNS per bucket they fall in, in bucket order."""
    bucket = np.floor(t / width) * width
    if len(t) > 1 and not (t[1:] >= t[:-1]).all():  # samples come in time order, but not always
        order = np.lexsort((t, bucket))  # by bucket, then time: a bucket's last row is its newest sample
        bucket, t, v = bucket[order], t[order], v[order]
    starts = np.flatnonzero(np.concatenate(([True], bucket[1:] != bucket[:-1])))
    sizes = np.diff(np.append(starts, len(bucket)))
    ends = starts + sizes - 1
    group = np.repeat(np.arange(len(starts)), sizes)
    imin = _first_extreme(v, starts, group, np.minimum)
    imax = _first_extreme(v, starts, group, np.maximum)
    return np.column_stack((bucket[starts], sizes, np.add.reduceat(v, starts),
                            t[imin], v[imin], t[imax], v[imax], t[ends], v[ends]))


def _first_extreme(v: F64, starts: npt.NDArray[np.intp], group: npt.NDArray[np.intp],
                   op: np.ufunc) -> npt.NDArray[np.intp]:
    """Per group (rows from each start to the next; `group` each row's), the index of its first row
    holding the extreme."""
    extreme = op.reduceat(v, starts)
    hit = np.flatnonzero(v == extreme[group])
    groups = group[hit]
    return hit[np.concatenate(([True], groups[1:] != groups[:-1]))]


def read_buckets(run: Run, key: tuple[str, str, str], width: int, low: float | None, high: float | None) -> F64:
    """Every bucket of one series and width starting in [low, high] (None: open), rows and chunks
    merged, in bucket order; callers cut the exact edge they need."""
    sql, params = SELECT_ROWS, [*key, width]
    chunk_sql = SELECT_CHUNKS
    chunk_params = [*key, width]
    if low is not None:
        sql, chunk_sql = sql + " AND bucket >= ?", chunk_sql + " AND b1 >= ?"
        params.append(low)
        chunk_params.append(low)
    if high is not None:
        sql, chunk_sql = sql + " AND bucket <= ?", chunk_sql + " AND b0 <= ?"
        params.append(high)
        chunk_params.append(high)
    parts = [np.asarray(run(sql, params), dtype=np.float64).reshape(-1, WIDTH)]
    parts += [_table(blob) for (blob,) in run(chunk_sql, chunk_params)]
    table = merge(parts)
    keep = np.ones(len(table), dtype=bool)
    if low is not None:
        keep &= table[:, BUCKET] >= low
    if high is not None:
        keep &= table[:, BUCKET] <= high
    return table if keep.all() else table[keep]


def _table(blob: bytes) -> F64:
    return np.frombuffer(bytes(blob), dtype=np.float64).reshape(-1, WIDTH)


def merge(parts: list[F64]) -> F64:
    """Bucket tables -> one, a bucket in several parts folded into one row (see the module's text)."""
    table = np.concatenate(parts) if len(parts) > 1 else parts[0]
    if len(table) < 2:
        return table
    table = table[np.argsort(table[:, BUCKET], kind="stable")]
    starts = np.flatnonzero(np.r_[True, table[1:, BUCKET] != table[:-1, BUCKET]])
    if len(starts) == len(table):
        return table
    out = table[starts].copy()
    out[:, N] = np.add.reduceat(table[:, N], starts)
    out[:, VSUM] = np.add.reduceat(table[:, VSUM], starts)
    group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(table)]))
    lowest = _best_of_group(group, -table[:, VMIN], -table[:, TMIN])  # ties: the earlier sample
    highest = _best_of_group(group, table[:, VMAX], -table[:, TMAX])
    newest = _best_of_group(group, table[:, TLAST])
    out[:, TMIN], out[:, VMIN] = table[lowest, TMIN], table[lowest, VMIN]
    out[:, TMAX], out[:, VMAX] = table[highest, TMAX], table[highest, VMAX]
    out[:, TLAST], out[:, VLAST] = table[newest, TLAST], table[newest, VLAST]
    return out


def _best_of_group(group: npt.NDArray[np.intp], score: F64, tie_break: F64 | None = None) -> npt.NDArray[np.intp]:
    """Per group (ascending group numbers), the index of its row with the highest score, ties going
    to the highest tie_break, then to the later row."""
    keys = (score, group) if tie_break is None else (tie_break, score, group)
    order = np.lexsort(keys)  # the last key sorts first; stable
    last_of_group = np.r_[np.flatnonzero(np.diff(group[order])), len(order) - 1]
    return order[last_of_group]


def first_bucket(run: Run, key: tuple[str, str, str], width: int) -> tuple[float, float] | None:
    """The (tmin, tmax) of a series' oldest bucket of `width`, rows and chunks alike."""
    row = run(f"{SELECT_ROWS} ORDER BY bucket LIMIT 1", [*key, width])
    chunk = run(f"{SELECT_CHUNKS} ORDER BY b0 LIMIT 1", [*key, width])
    parts = [np.asarray(row, dtype=np.float64).reshape(-1, WIDTH)]
    parts += [_table(blob)[:1] for (blob,) in chunk]
    table = merge(parts)
    if not len(table):
        return None
    return float(table[0, TMIN]), float(table[0, TMAX])
