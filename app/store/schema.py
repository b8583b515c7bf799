"""Schema migrations, numbered, for both dialects.

`schema_version` holds the version a database is at; opening a store applies every later
migration in order, each in its own transaction with its version bump. Version 1 is the
walking skeleton's schema (its `IF NOT EXISTS` statements adopt databases created before
migrations existed); version 2 adds the rollup table and backfills it from the raw samples;
version 3 adds the series catalog (what `metrics`/`ranks` list) and, in SQLite, clusters the
rollup table by its key; version 4 adds `sample_chunks`, a bulk batch's series as one row of arrays
(app/store/chunks.py); version 5 adds `rollup_chunks`, a bulk batch's rollup buckets the same way
(app/store/rollup_chunks.py); version 6 changes no table: it rewrites stored events and documents
with their secrets redacted (`api_key` of a logged server_args, ...; app/store/redaction.py), for
stores written before kvwatch redacted on the way in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Dialect = Literal["sqlite", "postgres"]


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    statements: tuple[str, ...]
    backfill_rollup: bool = False
    redact_secrets: bool = False


def _types(dialect: Dialect) -> dict[str, str]:
    if dialect == "postgres":
        return {"real": "DOUBLE PRECISION", "id": "BIGSERIAL PRIMARY KEY", "int": "BIGINT", "blob": "BYTEA"}
    return {"real": "REAL", "id": "INTEGER PRIMARY KEY", "int": "INTEGER", "blob": "BLOB"}


def migrations(dialect: Dialect) -> tuple[Migration, ...]:
    ty = _types(dialect)
    real, int_ = ty["real"], ty["int"]
    v1 = (
        f"""CREATE TABLE IF NOT EXISTS samples (
            host TEXT NOT NULL, metric TEXT NOT NULL, rank TEXT NOT NULL,
            t {real} NOT NULL, v {real} NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS samples_series ON samples (host, metric, rank, t)",
        f"""CREATE TABLE IF NOT EXISTS events (
            id {ty["id"]}, host TEXT NOT NULL, source TEXT NOT NULL, kind TEXT NOT NULL,
            t {real} NOT NULL, line {int_} NOT NULL, data TEXT NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS events_host_t ON events (host, t)",
        """CREATE TABLE IF NOT EXISTS tail_state (
            host TEXT NOT NULL, source TEXT NOT NULL, path TEXT NOT NULL, state TEXT NOT NULL,
            PRIMARY KEY (host, source, path))""",
        f"""CREATE TABLE IF NOT EXISTS documents (
            kind TEXT NOT NULL, key TEXT NOT NULL, host TEXT NOT NULL, t {real} NOT NULL, data TEXT NOT NULL,
            PRIMARY KEY (kind, key))""",
        "CREATE INDEX IF NOT EXISTS documents_kind_host ON documents (kind, host, t)",
    )
    v2 = (_rollup_table("samples_rollup", real, int_, ""),)
    v3: tuple[str, ...] = (
        """CREATE TABLE series_catalog (host TEXT NOT NULL, metric TEXT NOT NULL, rank TEXT NOT NULL,
            PRIMARY KEY (host, metric, rank))""",
        "INSERT INTO series_catalog SELECT DISTINCT host, metric, rank FROM samples_rollup WHERE width = 600",
    )
    if dialect == "sqlite":
        # Clustered by its key, a series' buckets sit on consecutive pages: a month of 600 s buckets
        # read 30 ms -> a few ms, because a rowid table scatters rows of the three widths and all series.
        v3 += (
            _rollup_table("samples_rollup_v3", real, int_, " WITHOUT ROWID"),
            "INSERT INTO samples_rollup_v3 SELECT * FROM samples_rollup",
            "DROP TABLE samples_rollup",
            "ALTER TABLE samples_rollup_v3 RENAME TO samples_rollup",
        )
    v4 = (
        f"""CREATE TABLE sample_chunks (host TEXT NOT NULL, metric TEXT NOT NULL, rank TEXT NOT NULL,
            t0 {real} NOT NULL, t1 {real} NOT NULL, n {int_} NOT NULL, ts {ty["blob"]} NOT NULL,
            vs {ty["blob"]} NOT NULL)""",
        "CREATE INDEX sample_chunks_series ON sample_chunks (host, metric, rank, t1)",
    )
    v5 = (
        f"""CREATE TABLE rollup_chunks (host TEXT NOT NULL, metric TEXT NOT NULL, rank TEXT NOT NULL,
            width {int_} NOT NULL, b0 {real} NOT NULL, b1 {real} NOT NULL, buckets {ty["blob"]} NOT NULL)""",
        "CREATE INDEX rollup_chunks_series ON rollup_chunks (host, metric, rank, width, b1)",
    )
    return (Migration(1, v1), Migration(2, v2, backfill_rollup=True), Migration(3, v3), Migration(4, v4),
            Migration(5, v5), Migration(6, (), redact_secrets=True))


def _rollup_table(name: str, real: str, int_: str, suffix: str) -> str:
    return f"""CREATE TABLE {name} (
            host TEXT NOT NULL, metric TEXT NOT NULL, rank TEXT NOT NULL, width {int_} NOT NULL,
            bucket {real} NOT NULL, n {int_} NOT NULL, vsum {real} NOT NULL,
            tmin {real} NOT NULL, vmin {real} NOT NULL, tmax {real} NOT NULL, vmax {real} NOT NULL,
            tlast {real} NOT NULL, vlast {real} NOT NULL,
            PRIMARY KEY (host, metric, rank, width, bucket)){suffix}"""


CREATE_VERSION_TABLE = "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"
LATEST_VERSION = 6
