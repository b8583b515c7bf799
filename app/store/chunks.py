"""Sample chunks: a bulk batch's series stored as one row per series, its times and values as arrays.

Catching up on days of log is millions of samples; one row (and one index entry) each was most of
the cost of attaching to a running server. A batch built in bulk (app/pipeline/columns.py) carries
`Batch.columns`; each (metric, rank) becomes one `sample_chunks` row holding float64 arrays, written
in the same transaction as the batch's rollups, events and file offset. Readers see chunks and
single-row samples as one series (app/store/sql.py); rollups are built from the arrays at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

import kvwatch.app.store.rollup_chunks as rollup_chunks

F64 = npt.NDArray[np.float64]
Run = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]
KEY = "host = ? AND metric = ? AND rank = ?"

INSERT_CHUNK = "INSERT INTO sample_chunks (host, metric, rank, t0, t1, n, ts, vs) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"


class SeriesColumns(NamedTuple):
    """One series of a bulk batch: times (epoch s) and values, in arrival order."""

    metric: str
    rank: str
    t: F64
    v: F64


def chunk_row(host: str, col: SeriesColumns) -> tuple[Any, ...]:
    t = np.ascontiguousarray(col.t, dtype=np.float64)
    v = np.ascontiguousarray(col.v, dtype=np.float64)
    return (host, col.metric, col.rank, float(t.min()), float(t.max()), len(t), t.tobytes(), v.tobytes())


def _arrays(ts: bytes, vs: bytes) -> tuple[F64, F64]:
    return np.frombuffer(bytes(ts), dtype=np.float64), np.frombuffer(bytes(vs), dtype=np.float64)


def read_chunks(run: Run, key: tuple[str, str, str], since: float | None, until: float | None) -> tuple[F64, F64]:
    """The chunks' samples of one series with since < t <= until (unordered)."""
    sql, params = f"SELECT ts, vs FROM sample_chunks WHERE {KEY}", list[Any](key)
    if since is not None:
        sql += " AND t1 > ?"
        params.append(since)
    if until is not None:
        sql += " AND t0 <= ?"
        params.append(until)
    parts = [_arrays(ts, vs) for ts, vs in run(sql, params)]
    if not parts:
        return np.empty(0), np.empty(0)
    t = np.concatenate([p[0] for p in parts])
    v = np.concatenate([p[1] for p in parts])
    keep = np.ones(len(t), dtype=bool)
    if since is not None:
        keep &= t > since
    if until is not None:
        keep &= t <= until
    return t[keep], v[keep]


def merge(raw: tuple[F64, F64], chunked: tuple[F64, F64]) -> tuple[F64, F64]:
    """Chunk samples (a backlog) and single-row samples as one series in time order; samples of one
    time keep chunks first, then rows (the order SQL gives rows of one time is unspecified anyway)."""
    if not len(chunked[0]):
        return raw
    t = np.concatenate([chunked[0], raw[0]])
    v = np.concatenate([chunked[1], raw[1]])
    order = np.argsort(t, kind="stable")
    return np.ascontiguousarray(t[order]), np.ascontiguousarray(v[order])


def latest_chunk(run: Run, key: tuple[str, str, str]) -> tuple[float, float] | None:
    rows = run(f"SELECT ts, vs FROM sample_chunks WHERE {KEY} ORDER BY t1 DESC LIMIT 1", key)
    if not rows:
        return None
    t, v = _arrays(*rows[0])
    last = len(t) - 1 - int(np.argmax(t[::-1]))  # the last sample at the newest time
    return float(t[last]), float(v[last])


def first_chunk_t(run: Run, key: tuple[str, str, str]) -> float | None:
    rows = run(f"SELECT min(t0) FROM sample_chunks WHERE {KEY}", key)
    return float(rows[0][0]) if rows and rows[0][0] is not None else None


def prune_chunks(run: Run, key: tuple[str, str, str], before: float) -> int:
    """Drop a series' chunk samples older than `before`: whole chunks, and the old part of a chunk
    straddling it rewritten. Runs inside the caller's transaction; returns how many samples went."""
    gone = run(f"SELECT count(*), coalesce(sum(n), 0) FROM sample_chunks WHERE {KEY} AND t1 < ?", (*key, before))
    dropped = int(gone[0][1]) if gone else 0
    if gone and gone[0][0]:
        run(f"DELETE FROM sample_chunks WHERE {KEY} AND t1 < ?", (*key, before))
    for t0, ts, vs in run(f"SELECT t0, ts, vs FROM sample_chunks WHERE {KEY} AND t0 < ?", (*key, before)):
        t, v = _arrays(ts, vs)
        keep = t >= before
        dropped += int(len(t) - keep.sum())
        run(f"DELETE FROM sample_chunks WHERE {KEY} AND t0 = ?", (*key, t0))
        run(INSERT_CHUNK, chunk_row(key[0], SeriesColumns(key[1], key[2], t[keep], v[keep])))
    return dropped


def column_buckets(host: str, col: SeriesColumns) -> list[tuple[Any, ...]]:
    """One series' arrays folded into its rollup buckets of every width at once: a rollup_chunks
    row per width (app/store/rollup_chunks.py)."""
    return rollup_chunks.chunk_rows(host, col.metric, col.rank, col.t, col.v)
