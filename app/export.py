"""A host's stored series as one long table (pandas), and that table as CSV or Parquet bytes.

Shared by GET /api/export and `kvwatch export`. Long format, one row a sample: `time` (UTC),
`t` (epoch seconds), `metric`, `rank`, `value`.

Where retention pruned the raw samples, the rows come from the 10 s rollup buckets instead
(app/store/coverage.py), and then the table gains four columns: `source` (`raw` or `rollup_10s`),
`samples` (how many samples a bucket holds; 1 for a raw row), `min` and `max` (the bucket's extremes;
the value itself for a raw row). A rollup row's `t` is its bucket's start, its `value` the bucket's mean
(stored as count and sum, so exact), standing for [t, t + 10 s). An export with no such row keeps the
five columns.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence
from typing import Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kvwatch.app.store.base import Store
from kvwatch.app.store.coverage import FINEST, read_window

ExportFormat = Literal["csv", "parquet"]
FORMATS: tuple[ExportFormat, ...] = ("csv", "parquet")
COLUMNS = ("time", "t", "metric", "rank", "value")
ROLLUP_COLUMNS = ("source", "samples", "min", "max")
NOTHING_STORED = "no samples stored in its window: neither raw samples nor rollups"
CHUNK_ROWS = 50_000


def series_frame(
    store: Store,
    host: str,
    metrics: Sequence[str],
    rank: str = "",
    since: float | None = None,
    until: float | None = None,
    on_metric: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """Every stored sample of `metrics` in (since, until], 10 s buckets where the raw samples were pruned;
    an empty frame with the columns if none."""
    parts = []
    for name in metrics:
        read = read_window(store, host, name, rank=rank, since=since, until=until)
        parts.append(pd.DataFrame({
            "t": read.t, "metric": name, "rank": rank, "value": read.v,
            "source": np.where(read.from_rollup, f"rollup_{FINEST}s", "raw"),
            "samples": read.n.astype(np.int64), "min": read.vmin, "max": read.vmax,
        }))
        if on_metric is not None:
            on_metric(name)
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype="float64" if c in ("t", "value") else "object") for c in COLUMNS})
    frame = pd.concat(parts, ignore_index=True).sort_values(["t", "metric"], kind="stable")
    frame.insert(0, "time", pd.to_datetime(frame["t"], unit="s", utc=True))
    if not (frame["source"] != "raw").any():
        frame = frame.drop(columns=list(ROLLUP_COLUMNS))
    return frame.reset_index(drop=True)


def rollup_rows(frame: pd.DataFrame) -> int:
    """How many rows of an export are 10 s rollup buckets rather than raw samples."""
    return int((frame["source"] != "raw").sum()) if "source" in frame.columns else 0


def encode(frame: pd.DataFrame, fmt: ExportFormat) -> bytes:
    if fmt == "csv":
        return frame.to_csv(index=False).encode()
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def encode_chunks(frame: pd.DataFrame, fmt: ExportFormat, rows: int = CHUNK_ROWS) -> Iterator[bytes]:
    """`encode(frame, fmt)` in pieces of `rows` rows, for a streamed answer: the whole file never sits in
    memory next to the table (a CSV is several times the table's size). Same bytes for CSV; for Parquet
    one row group a piece, read back to the same table."""
    if fmt == "csv":
        for start in range(0, max(len(frame), 1), rows):
            yield frame.iloc[start:start + rows].to_csv(index=False, header=start == 0).encode()
        return
    sink = _Pieces()
    table = pa.Table.from_pandas(frame.iloc[:0], preserve_index=False)
    with pq.ParquetWriter(pa.PythonFile(sink, mode="w"), table.schema) as writer:
        for start in range(0, len(frame), rows):
            writer.write_table(pa.Table.from_pandas(frame.iloc[start:start + rows], schema=table.schema,
                                                    preserve_index=False))
            yield sink.take()
    yield sink.take()  # the footer


class _Pieces:
    """A write-only file that hands out what was written since the last `take` (and knows its offset,
    which Parquet's footer records)."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.position = 0
        self.closed = False

    def write(self, data: bytes) -> int:
        self.parts.append(bytes(data))
        self.position += len(data)
        return len(data)

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        return None

    def close(self) -> None:
        self.closed = True

    def take(self) -> bytes:
        out = b"".join(self.parts)
        self.parts.clear()
        return out


def safe_name(name: str) -> str:
    """A file name from a host or run id: nothing a shell or a Content-Disposition header could trip on."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
