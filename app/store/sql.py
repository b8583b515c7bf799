"""The Store written once in SQL both SQLite and PostgreSQL accept; subclasses bring the connection.

Statements use `?` placeholders; a dialect's `_run` adapts them. One lock serialises the one
connection, so the collector threads and the API share a store safely.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

from app.store.base import Batch, Sample
from app.store.rollup import ROLLUP_WIDTHS, UPSERT_ROLLUP, bucket_rows, rollup_points
from app.store.schema import CREATE_VERSION_TABLE, Dialect, Migration, migrations

Rows = list[tuple[Any, ...]]
COARSEST = ROLLUP_WIDTHS[-1]  # the fewest buckets: where the rollups reach furthest back cheaply
EMPTY: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] = (np.empty(0), np.empty(0))


class SqlStore:
    dialect: Dialect

    def __init__(self) -> None:
        self._lock = threading.RLock()

    # -- what a dialect provides -------------------------------------------------------------
    def _run(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        raise NotImplementedError

    def _run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        raise NotImplementedError

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        raise NotImplementedError
        yield

    def _insert_samples(self, host: str, samples: Sequence[Sample]) -> None:
        self._run_many(
            "INSERT INTO samples (host, metric, rank, t, v) VALUES (?, ?, ?, ?, ?)",
            [(host, *sample) for sample in samples],
        )

    def close(self) -> None:
        raise NotImplementedError

    # -- schema -----------------------------------------------------------------------------
    def _migrate(self) -> None:
        with self._lock:
            self._run(CREATE_VERSION_TABLE)
            for migration in migrations(self.dialect):
                if migration.version > self.schema_version():
                    self._apply(migration)

    def schema_version(self) -> int:
        with self._lock:
            row = self._run("SELECT max(version) FROM schema_version")
        return int(row[0][0]) if row and row[0][0] is not None else 0

    def _apply(self, migration: Migration) -> None:
        with self._transaction():
            for statement in migration.statements:
                self._run(statement)
            if migration.backfill_rollup:
                self._backfill_rollup()
            self._run("DELETE FROM schema_version")
            self._run("INSERT INTO schema_version (version) VALUES (?)", (migration.version,))

    def _backfill_rollup(self) -> None:
        # One series at a time keeps memory bounded by the longest series, not the database.
        for host, metric, rank in self._run("SELECT DISTINCT host, metric, rank FROM samples"):
            rows = self._run(
                "SELECT t, v FROM samples WHERE host = ? AND metric = ? AND rank = ?", (host, metric, rank)
            )
            samples = [Sample(metric, rank, float(t), float(v)) for t, v in rows]
            self._run_many(UPSERT_ROLLUP, bucket_rows(host, samples))

    # -- writing ----------------------------------------------------------------------------
    def commit(self, batch: Batch) -> None:
        with self._transaction():
            if batch.samples:
                self._insert_samples(batch.host, batch.samples)
                self._run_many(UPSERT_ROLLUP, bucket_rows(batch.host, batch.samples))
                self._run_many(
                    "INSERT INTO series_catalog (host, metric, rank) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                    sorted({(batch.host, s.metric, s.rank) for s in batch.samples}),
                )
            if batch.events:
                self._run_many(
                    "INSERT INTO events (host, source, kind, t, line, data) VALUES (?, ?, ?, ?, ?, ?)",
                    [(batch.host, batch.source, e.kind, e.t, e.line, json.dumps(e.data))
                     for e in batch.events],
                )
            if batch.state is not None:
                self._run(
                    "INSERT INTO tail_state (host, source, path, state) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT (host, source, path) DO UPDATE SET state = excluded.state",
                    (batch.host, batch.source, batch.path, json.dumps(batch.state)),
                )

    def put_document(self, kind: str, key: str, host: str, t: float, data: dict[str, Any]) -> None:
        with self._transaction():
            self._run(
                "INSERT INTO documents (kind, key, host, t, data) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (kind, key) DO UPDATE"
                " SET host = excluded.host, t = excluded.t, data = excluded.data",
                (kind, key, host, t, json.dumps(data)),
            )

    def prune(self, before: float) -> int:
        """Drop raw samples older than `before`; their rollups stay, so old windows still draw."""
        with self._transaction():
            count = self._run("SELECT count(*) FROM samples WHERE t < ?", (before,))[0][0]
            self._run("DELETE FROM samples WHERE t < ?", (before,))
        return int(count)

    # -- reading ----------------------------------------------------------------------------
    def load_state(self, host: str, source: str, path: str) -> dict[str, Any] | None:
        with self._lock:
            rows = self._run(
                "SELECT state FROM tail_state WHERE host = ? AND source = ? AND path = ?",
                (host, source, path),
            )
        return None if not rows else dict(json.loads(rows[0][0]))

    def series(
        self, host: str, metric: str, rank: str = "", since: float | None = None, until: float | None = None
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        where, params = _window("t", [host, metric, rank], since, until)
        with self._lock:
            rows = self._run(f"SELECT t, v FROM samples WHERE host = ? AND metric = ? AND rank = ?{where}"
                             " ORDER BY t", params)
        if not rows:
            return EMPTY
        table = np.asarray(rows, dtype=np.float64)
        return np.ascontiguousarray(table[:, 0]), np.ascontiguousarray(table[:, 1])

    def rollup(
        self, host: str, metric: str, width: int, rank: str = "",
        since: float | None = None, until: float | None = None,
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        # A bucket straddling `since` is kept whole: the edge is at most one bucket wide.
        lower = None if since is None else since - width
        where, params = _window("bucket", [host, metric, rank, width], lower, until)
        with self._lock:
            rows = self._run(
                "SELECT tmin, vmin, tmax, vmax FROM samples_rollup"
                f" WHERE host = ? AND metric = ? AND rank = ? AND width = ?{where} ORDER BY bucket",
                params,
            )
        t, v = rollup_points(rows)
        keep = np.ones(len(t), dtype=bool)
        if since is not None:
            keep &= t > since
        if until is not None:
            keep &= t <= until
        return (t, v) if keep.all() else (np.ascontiguousarray(t[keep]), np.ascontiguousarray(v[keep]))

    def extent(self, host: str, metric: str, rank: str = "") -> tuple[float, float] | None:
        key = (host, metric, rank)
        one = "SELECT t FROM samples WHERE host = ? AND metric = ? AND rank = ? ORDER BY t"
        with self._lock:
            first = self._run(f"{one} LIMIT 1", key)
            last = self._run(f"{one} DESC LIMIT 1", key)
            if first:
                # Raw samples may have been pruned: the rollups remember further back.
                older = self._run(
                    "SELECT min(tmin) FROM samples_rollup WHERE host = ? AND metric = ? AND rank = ?"
                    " AND width = ? AND bucket < ?", (*key, COARSEST, first[0][0]))
                if older and older[0][0] is not None:
                    first = older
        if not first or not last:
            return None
        return float(first[0][0]), float(last[0][0])

    def latest(self, host: str, metric: str, rank: str = "") -> tuple[float, float] | None:
        with self._lock:
            rows = self._run(
                "SELECT t, v FROM samples WHERE host = ? AND metric = ? AND rank = ? ORDER BY t DESC LIMIT 1",
                (host, metric, rank),
            )
        return None if not rows else (float(rows[0][0]), float(rows[0][1]))

    def ranks(self, host: str, metric: str) -> list[str]:
        with self._lock:
            rows = self._run("SELECT rank FROM series_catalog WHERE host = ? AND metric = ?", (host, metric))
        return sorted(str(r[0]) for r in rows)

    def metrics(self, host: str) -> list[str]:
        with self._lock:
            rows = self._run("SELECT DISTINCT metric FROM series_catalog WHERE host = ?", (host,))
        return sorted(str(r[0]) for r in rows)

    def events(
        self, host: str | None = None, kinds: tuple[str, ...] = (),
        since: float | None = None, limit: int = 1000,
    ) -> list[dict[str, Any]]:
        sql = "SELECT host, source, kind, t, line, data FROM events WHERE 1 = 1"
        params: list[Any] = []
        if host is not None:
            sql += " AND host = ?"
            params.append(host)
        if kinds:
            sql += f" AND kind IN ({', '.join('?' for _ in kinds)})"
            params.extend(kinds)
        if since is not None:
            sql += " AND t > ?"
            params.append(since)
        with self._lock:
            rows = self._run(sql + " ORDER BY t DESC, id DESC LIMIT ?", [*params, limit])
        return [
            {"host": h, "source": s, "kind": k, "t": t, "line": line, **json.loads(d)}
            for h, s, k, t, line, d in reversed(rows)
        ]

    def documents(self, kind: str, host: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT key, host, t, data FROM documents WHERE kind = ?"
        params: list[Any] = [kind]
        if host is not None:
            sql += " AND host = ?"
            params.append(host)
        with self._lock:
            rows = self._run(sql + " ORDER BY t, key", params)
        return [{"key": k, "host": h, "t": t, "data": json.loads(d)} for k, h, t, d in rows]


def _window(
    column: str, params: list[Any], since: float | None, until: float | None
) -> tuple[str, list[Any]]:
    where = ""
    if since is not None:
        where += f" AND {column} > ?"
        params.append(since)
    if until is not None:
        where += f" AND {column} <= ?"
        params.append(until)
    return where, params
