"""The Store written once in SQL both SQLite and PostgreSQL accept; subclasses bring the connection.

Statements use `?` placeholders; a dialect's `_run` adapts them. Writes go through `_transaction` on
the writer connection, serialised by one lock; reads go through `_read`, which a dialect serves from
connections of their own (SQLite: one per reading thread on the write-ahead log; PostgreSQL: a pool),
so an API read never waits behind a collector's commit.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

import kvwatch.app.store.chunks as chunks
import kvwatch.app.store.redaction as redaction
import kvwatch.app.store.rollup_chunks as rollup_chunks
from kvwatch.app.store.base import Batch, Sample
from kvwatch.app.store.rollup import ROLLUP_WIDTHS, UPSERT_ROLLUP, bucket_rows, rollup_points
from kvwatch.app.store.schema import CREATE_VERSION_TABLE, Dialect, Migration, migrations
from kvwatch.parsers.secrets import redact

Rows = list[tuple[Any, ...]]
FINEST = ROLLUP_WIDTHS[0]
EMPTY: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] = (np.empty(0), np.empty(0))


class SqlStore:
    dialect: Dialect

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._catalogued: set[tuple[str, str, str]] | None = None
        self._catalog_pending: set[tuple[str, str, str]] = set()  # named in the open transaction

    # -- what a dialect provides -------------------------------------------------------------
    def _run(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        raise NotImplementedError

    def _run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        raise NotImplementedError

    def _read(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        """A query outside any write transaction; by default on the writer connection, under its lock."""
        with self._lock:
            return self._run(sql, params)

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        raise NotImplementedError
        yield

    def _rows_changed(self, sql: str, params: Sequence[Any]) -> int:
        """Run a DELETE, UPDATE or INSERT; the number of rows it changed."""
        raise NotImplementedError

    def _insert_samples(self, host: str, samples: Sequence[Sample]) -> None:
        self._run_many(
            "INSERT INTO samples (host, metric, rank, t, v) VALUES (?, ?, ?, ?, ?)",
            [(host, *sample) for sample in samples],
        )

    def health(self) -> dict[str, Any]:
        """An embedded database is there while the process is (PostgreSQL's store overrides this)."""
        return {"state": "ok"}

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
            if migration.redact_secrets:
                redaction.redact_stored(self._run)
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
            self._write_batch(batch)

    def _write_batch(self, batch: Batch) -> None:
        """The batch's rows and resume state, inside a transaction the caller holds."""
        if batch.samples:
            self._insert_samples(batch.host, batch.samples)
            self._run_many(UPSERT_ROLLUP, bucket_rows(batch.host, batch.samples))
            self._catalog({(batch.host, s.metric, s.rank) for s in batch.samples})
        if batch.columns:
            self._commit_columns(batch.host, batch.columns)
        if batch.events:
            self._run_many(
                "INSERT INTO events (host, source, kind, t, line, data) VALUES (?, ?, ?, ?, ?, ?)",
                [(batch.host, batch.source, e.kind, e.t, e.line, json.dumps(redact(e.data)))
                 for e in batch.events],
            )
        if batch.state is not None:
            self._run(
                "INSERT INTO tail_state (host, source, path, state) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (host, source, path) DO UPDATE SET state = excluded.state",
                (batch.host, batch.source, batch.path, json.dumps(batch.state)),
            )

    def _commit_columns(self, host: str, columns: list[chunks.SeriesColumns]) -> None:
        filled = [col for col in columns if len(col.t)]
        self._run_many(chunks.INSERT_CHUNK, [chunks.chunk_row(host, col) for col in filled])
        self._run_many(rollup_chunks.INSERT, [row for col in filled for row in chunks.column_buckets(host, col)])
        self._catalog({(host, col.metric, col.rank) for col in filled})

    def _catalog(self, series: set[tuple[str, str, str]]) -> None:
        """Name the series in `series_catalog`. A dialect that knows when its transactions commit keeps
        the committed names (`_catalogued`), so a host's known series cost nothing per batch."""
        if self._catalogued is not None:
            series = series - self._catalogued - self._catalog_pending
            self._catalog_pending |= series
        if series:
            self._run_many(
                "INSERT INTO series_catalog (host, metric, rank) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                sorted(series),
            )

    def put_document(self, kind: str, key: str, host: str, t: float, data: dict[str, Any]) -> None:
        with self._transaction():
            self._run(
                "INSERT INTO documents (kind, key, host, t, data) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (kind, key) DO UPDATE"
                " SET host = excluded.host, t = excluded.t, data = excluded.data",
                (kind, key, host, t, json.dumps(redact(data))),
            )

    def swap_document(
        self, kind: str, key: str, host: str, t: float, data: dict[str, Any],
        expect: dict[str, Any] | None, expect_t: float | None = None,
    ) -> bool:
        """Compare-and-set: write the document only if it is absent (`expect` None) or still holds
        `expect` (and, given, the time `expect_t`); True when written. Leases rely on it: of two
        processes taking over the same stale lease, exactly one succeeds."""
        with self._transaction():
            if expect is None:
                return self._rows_changed(
                    "INSERT INTO documents (kind, key, host, t, data) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    (kind, key, host, t, json.dumps(data)),
                ) == 1
            sql = "UPDATE documents SET host = ?, t = ?, data = ? WHERE kind = ? AND key = ? AND data = ?"
            params: list[Any] = [host, t, json.dumps(data), kind, key, json.dumps(expect)]
            if expect_t is not None:
                sql += " AND t = ?"
                params.append(expect_t)
            return self._rows_changed(sql, params) == 1

    def delete_documents(self, kind: str, keys: list[str]) -> int:
        with self._transaction():
            return sum(self._rows_changed("DELETE FROM documents WHERE kind = ? AND key = ?", (kind, key))
                       for key in keys)

    def prune(self, before: float, batch: int = 0) -> int:
        """Drop every series' raw samples older than `before`; their rollups stay, so old windows still
        draw. `batch` > 0 deletes at most about that many rows a transaction (see `prune_series`)."""
        keys = self._read("SELECT host, metric, rank FROM series_catalog")
        total = 0
        for host, metric, rank in keys:
            while True:
                count = self.prune_series(host, metric, rank, before, batch)
                total += count
                if batch <= 0 or count < batch:
                    break
        return total

    def prune_series(self, host: str, metric: str, rank: str, before: float, limit: int = 0) -> int:
        """Delete one series' raw samples older than `before`, the oldest `limit` of them (and any tied
        with the last) when `limit` > 0, in one transaction; returns how many were deleted.

        Bounded by the time of the limit-th sample rather than DELETE ... LIMIT, which neither SQLite
        (by default) nor PostgreSQL accepts; both statements walk the (host, metric, rank, t) index."""
        key = (host, metric, rank)
        series = "FROM samples WHERE host = ? AND metric = ? AND rank = ? AND t"
        with self._transaction():
            if limit > 0:
                edge = self._run(f"SELECT t {series} < ? ORDER BY t LIMIT 1 OFFSET ?", (*key, before, limit - 1))
                if edge:
                    return self._rows_changed(f"DELETE {series} <= ?", (*key, float(edge[0][0])))
            # chunks go whole (or trimmed at `before`), `limit` or not: one is at most a batch
            return self._rows_changed(f"DELETE {series} < ?", (*key, before)) + chunks.prune_chunks(
                self._run, key, before)

    # -- reading ----------------------------------------------------------------------------
    def load_state(self, host: str, source: str, path: str) -> dict[str, Any] | None:
        rows = self._read(
            "SELECT state FROM tail_state WHERE host = ? AND source = ? AND path = ?",
            (host, source, path),
        )
        return None if not rows else dict(json.loads(rows[0][0]))

    def series(
        self, host: str, metric: str, rank: str = "", since: float | None = None, until: float | None = None
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        where, params = _window("t", [host, metric, rank], since, until)
        rows = self._read(f"SELECT t, v FROM samples WHERE host = ? AND metric = ? AND rank = ?{where}"
                          " ORDER BY t", params)
        chunked = chunks.read_chunks(self._read, (host, metric, rank), since, until)
        raw = EMPTY
        if rows:
            table = np.asarray(rows, dtype=np.float64)
            raw = np.ascontiguousarray(table[:, 0]), np.ascontiguousarray(table[:, 1])
        return chunks.merge(raw, chunked)

    def rollup(
        self, host: str, metric: str, width: int, rank: str = "",
        since: float | None = None, until: float | None = None,
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        # A bucket straddling `since` is kept whole: the edge is at most one bucket wide.
        table = rollup_chunks.read_buckets(self._read, (host, metric, rank), width,
                                           None if since is None else since - width, until)
        if since is not None:
            table = table[table[:, rollup_chunks.BUCKET] > since - width]
        t, v = rollup_points(table[:, [rollup_chunks.TMIN, rollup_chunks.VMIN, rollup_chunks.TMAX, rollup_chunks.VMAX]])
        keep = np.ones(len(t), dtype=bool)
        if since is not None:
            keep &= t > since
        if until is not None:
            keep &= t <= until
        return (t, v) if keep.all() else (np.ascontiguousarray(t[keep]), np.ascontiguousarray(v[keep]))

    def buckets(
        self, host: str, metric: str, width: int, rank: str = "",
        since: float | None = None, until: float | None = None,
    ) -> npt.NDArray[np.float64]:
        """Rows (bucket start, n, sum, min, max) of the buckets that START in [since, until), in order."""
        table = rollup_chunks.read_buckets(self._read, (host, metric, rank), width, since, until)
        if until is not None:
            table = table[table[:, rollup_chunks.BUCKET] < until]
        return np.ascontiguousarray(table[:, [rollup_chunks.BUCKET, rollup_chunks.N, rollup_chunks.VSUM,
                                              rollup_chunks.VMIN, rollup_chunks.VMAX]])

    def raw_start(self, host: str, metric: str, rank: str = "") -> float | None:
        rows = self._read(
            "SELECT t FROM samples WHERE host = ? AND metric = ? AND rank = ? ORDER BY t LIMIT 1",
            (host, metric, rank),
        )
        chunked = chunks.first_chunk_t(self._read, (host, metric, rank))
        firsts = [float(rows[0][0])] if rows else []
        return min([*firsts, chunked]) if chunked is not None else (firsts[0] if firsts else None)

    def extent(self, host: str, metric: str, rank: str = "") -> tuple[float, float] | None:
        key = (host, metric, rank)
        first = self.raw_start(*key)
        last = self.latest(*key)
        if first is None or last is None:
            return None
        # Raw samples may have been pruned: the finest rollup remembers further back. A bucket keeps
        # the times of its min and max, not of its first sample: the start is exact to within 10 s.
        older = rollup_chunks.first_bucket(self._read, key, FINEST)
        if older is not None:
            first = min(first, *older)
        return first, last[0]

    def latest(self, host: str, metric: str, rank: str = "") -> tuple[float, float] | None:
        rows = self._read(
            "SELECT t, v FROM samples WHERE host = ? AND metric = ? AND rank = ? ORDER BY t DESC LIMIT 1",
            (host, metric, rank),
        )
        chunked = chunks.latest_chunk(self._read, (host, metric, rank))
        raw = None if not rows else (float(rows[0][0]), float(rows[0][1]))
        if chunked is None or (raw is not None and raw[0] > chunked[0]):
            return raw
        return chunked

    def ranks(self, host: str, metric: str) -> list[str]:
        rows = self._read("SELECT rank FROM series_catalog WHERE host = ? AND metric = ?", (host, metric))
        return sorted(str(r[0]) for r in rows)

    def catalog(self, host: str) -> list[tuple[str, str]]:
        """The host's series as (metric, rank) pairs."""
        rows = self._read("SELECT metric, rank FROM series_catalog WHERE host = ?", (host,))
        return sorted((str(m), str(r)) for m, r in rows)

    def metrics(self, host: str) -> list[str]:
        rows = self._read("SELECT DISTINCT metric FROM series_catalog WHERE host = ?", (host,))
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
        rows = self._read(sql + " ORDER BY t DESC, id DESC LIMIT ?", [*params, limit])
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
        rows = self._read(sql + " ORDER BY t, key", params)
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
