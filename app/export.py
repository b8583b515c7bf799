"""A host's stored series as one long table (pandas), and that table as CSV or Parquet bytes.

Shared by GET /api/export and `kvwatch export`. Long format, one row a sample: `time` (UTC),
`t` (epoch seconds), `metric`, `rank`, `value`.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Literal

import pandas as pd

from app.store.base import Store

ExportFormat = Literal["csv", "parquet"]
FORMATS: tuple[ExportFormat, ...] = ("csv", "parquet")
COLUMNS = ("time", "t", "metric", "rank", "value")


def series_frame(
    store: Store,
    host: str,
    metrics: Sequence[str],
    rank: str = "",
    since: float | None = None,
    until: float | None = None,
    on_metric: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """Every stored sample of `metrics` in (since, until]; an empty frame with the columns if none."""
    parts = []
    for name in metrics:
        t, v = store.series(host, name, rank=rank, since=since, until=until)
        parts.append(pd.DataFrame({"t": t, "metric": name, "rank": rank, "value": v}))
        if on_metric is not None:
            on_metric(name)
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype="float64" if c in ("t", "value") else "object") for c in COLUMNS})
    frame = pd.concat(parts, ignore_index=True).sort_values(["t", "metric"], kind="stable")
    frame.insert(0, "time", pd.to_datetime(frame["t"], unit="s", utc=True))
    return frame.reset_index(drop=True)


def encode(frame: pd.DataFrame, fmt: ExportFormat) -> bytes:
    if fmt == "csv":
        return frame.to_csv(index=False).encode()
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def safe_name(name: str) -> str:
    """A file name from a host or run id: nothing a shell or a Content-Disposition header could trip on."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
