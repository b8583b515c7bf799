"""Records (parsers' output) to store rows: numeric series as samples, everything else as events.

Series naming follows the record fields (docs/records.md): `token_usage`, `running_req`, ... With DP
attention SGLang logs one line per DP rank; those samples carry rank `DP<n>`, and `RankAggregator`
(app/pipeline/aggregate.py) derives the host's own series from the ranks' latest values by the
metric catalog's rule (app/metrics_catalog/).
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any, Protocol

from kvwatch.app.metrics_catalog.names import CLIENT_DONE, CLIENT_TOTAL, INPUT_THROUGHPUT
from kvwatch.app.pipeline.aggregate import RankAggregator
from kvwatch.app.store.base import EventRow, Sample
from kvwatch.parsers.timestamps import to_epoch


class RecordClock(Protocol):
    """What places a record in time: a source's clock (app/pipeline/stamps.py's SourceClock)."""

    def record_time(self, record: dict[str, Any], now: float) -> float | None: ...

SAMPLE_KINDS = frozenset({"decode", "prefill", "stats", "gpu", "progress"})
# Per-kind fields that are identifiers or labels, not series.
NOT_SERIES = frozenset({"kind", "line", "ts", "tags", "gpu", "engine", "engines", "iter", "file", "cuda_graph"})
PROGRESS_METRICS = {"done": CLIENT_DONE, "total": CLIENT_TOTAL}
__all__ = ["NOT_SERIES", "PROGRESS_METRICS", "SAMPLE_KINDS", "RankAggregator", "metric_name", "rank_of", "record_rows",
           "record_time"]


def rank_of(record: dict[str, Any]) -> str:
    if record.get("kind") == "gpu":
        return f"GPU{record.get('gpu', 0)}"
    tags = record.get("tags") or {}
    return f"DP{tags['DP']}" if "DP" in tags else ""


def record_rows(record: dict[str, Any], now: float | None = None,
                clock: RecordClock | None = None) -> tuple[list[Sample], list[EventRow]]:
    """One record's samples (kinds with series) or its event row (everything else).

    `clock`: the source's zone and skew (app/pipeline/stamps.py); without one a naive stamp is UTC.
    `now`: the time of a record without a stamp (when its line appeared), default the current time.
    """
    t = record_time(record, now if now is not None else time.time(), clock)
    kind = str(record.get("kind", ""))
    if kind not in SAMPLE_KINDS:
        data = {k: v for k, v in record.items() if k not in ("kind", "line")}
        return [], [EventRow(kind, t, int(record.get("line", 0)), data)]
    rank = rank_of(record)
    samples = []
    for key, value in record.items():
        if key in NOT_SERIES or isinstance(value, bool) or not isinstance(value, int | float):
            continue
        metric = PROGRESS_METRICS.get(key, key) if kind == "progress" else metric_name(kind, key)
        samples.append(Sample(metric, rank, t, float(value)))
    return samples, []


def record_time(record: dict[str, Any], read_at: float, clock: RecordClock | None = None) -> float:
    """The record's UTC epoch from its stamp (zone and skew by `clock`), else `read_at`."""
    ts = record.get("ts")
    if clock is not None:
        t = clock.record_time(record, read_at)
    else:  # Time-only stamps (SGLang 0.2/0.3) carry no date: take today's, as the line is read now.
        t = to_epoch(ts, dt.datetime.now(dt.UTC).date()) if isinstance(ts, str) else None
    return t if t is not None else read_at


def metric_name(kind: str, key: str) -> str:
    if kind == "gpu":
        return f"gpu_{key}"
    if kind == "stats" and key == "prompt_throughput":
        return INPUT_THROUGHPUT
    return key
