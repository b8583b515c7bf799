"""Records (parsers' output) to store rows: numeric series as samples, everything else as events; and
the live path, one host's records to rows with the host's own series combined as they come.

`live_rows` is the whole per-record step: bound the record's fields, make its samples or event
(`record_rows`), check its stamp against the source's watermark (app/pipeline/watermark.py), prefix
/metrics series, then keep only series the host may still add (app/pipeline/bounds.py) and follow
the ranked samples of one instant with the host's value combined by the metric catalog's rule
(app/pipeline/aggregate.py). What it remembers between deliveries is all in `LiveState`, passed in,
so a test (or another caller) sees every input and every effect. The backlog path
(app/pipeline/columns.py) shares the state's bounds and aggregator and `record_rows`' naming, not
`live_rows`: it combines a whole batch at once.

Series naming follows the record fields (docs/records.md): `token_usage`, `running_req`, ... With DP
attention SGLang logs one line per DP rank; those samples carry rank `DP<n>`, and `RankAggregator`
derives the host's own series from the ranks' latest values by the metric catalog's rule
(app/metrics_catalog/).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from kvwatch.app.metrics_catalog.names import CLIENT_DONE, CLIENT_TOTAL, INPUT_THROUGHPUT
from kvwatch.app.pipeline.aggregate import RankAggregator
from kvwatch.app.pipeline.bounds import HostBounds
from kvwatch.app.pipeline.watermark import StampGuard
from kvwatch.app.store.base import EventRow, Sample
from kvwatch.parsers import Record
from kvwatch.parsers.timestamps import to_epoch


class RecordClock(Protocol):
    """What places a record in time: a source's clock (app/pipeline/stamps.py's SourceClock)."""

    def record_time(self, record: dict[str, Any], now: float) -> float | None: ...

SAMPLE_KINDS = frozenset({"decode", "prefill", "stats", "gpu", "progress"})
# Per-kind fields that are identifiers or labels, not series.
NOT_SERIES = frozenset({"kind", "line", "ts", "tags", "gpu", "engine", "engines", "iter", "file", "cuda_graph"})
PROGRESS_METRICS = {"done": CLIENT_DONE, "total": CLIENT_TOTAL}
__all__ = ["NOT_SERIES", "PROGRESS_METRICS", "SAMPLE_KINDS", "LiveState", "RankAggregator", "Rows", "live_rows",
           "metric_name", "rank_of", "record_rows", "record_time", "with_host_samples"]


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



@dataclass(slots=True)
class LiveState:
    """One host's memory across deliveries: each part's latest value (for the host's combined
    series), what its bounds have admitted and dropped, each source's stamp watermark."""

    aggregator: RankAggregator = field(default_factory=RankAggregator)
    bounds: HostBounds = field(default_factory=HostBounds)
    stamps: StampGuard = field(default_factory=StampGuard)


class Rows(NamedTuple):
    """Store rows in arrival order: each record's samples followed by the host values they produced."""

    samples: list[Sample]
    events: list[EventRow]

    @property
    def host_samples(self) -> list[Sample]:
        """The host's own series (no rank): unranked records' samples and the combined values."""
        return [sample for sample in self.samples if not sample.rank]


def live_rows(records: Iterable[Record], state: LiveState, source: str, path: str, *,
              now: float | None = None, clock: RecordClock | None = None, prefix: str = "") -> Rows:
    """The rows of `records` read from `path` (a followed file, or a GPU/metrics read) of `source`.

    `now`: when the records' line appeared (an unstamped record's time, and the time an outlier's event
    is re-timed to); default the current time. `clock`: the source's zone and skew; without one a naive
    stamp is UTC. `prefix`: put before every metric name (/metrics series stay apart from the log's).
    """
    rows = Rows([], [])
    instant: list[Sample] = []  # kept ranked samples of the records at one time, not yet combined
    for record in records:
        read_at = time.time() if now is None else now
        samples, events = record_rows(state.bounds.record(record), read_at, clock)
        line = int(record.get("line", 0) or 0)
        samples, events = state.stamps.filter(source, path, line, samples, events, read_at)
        if prefix:
            samples = [s._replace(metric=prefix + s.metric) for s in samples]
        kept = state.bounds.samples(samples)
        ranked = [s for s in kept if s.rank]
        # The parts of one instant (the 8 GPUs of a tick) are combined once, after the last of them:
        # per record, the host would get 8 values a tick, the first ones mixing new and old parts.
        if instant and ranked and ranked[0].t != instant[0].t:
            rows.samples.extend(_combined(instant, state))
            instant = []
        rows.samples.extend(kept)
        if ranked:
            unknown = [s.metric for s in ranked if not state.bounds.knows((s.metric, ""))]
            if unknown:
                state.bounds.reserve([series for metric in unknown for series in state.aggregator.host_series(metric)])
            instant += ranked
        rows.events.extend(events)
    rows.samples.extend(_combined(instant, state))
    return rows


def _combined(ranked: list[Sample], state: LiveState) -> list[Sample]:
    return state.bounds.samples(state.aggregator.host_samples(ranked)) if ranked else []


def with_host_samples(samples: list[Sample], state: LiveState) -> list[Sample]:
    """The samples the host's series bound admits, then the host values their ranked ones combine to."""
    kept = state.bounds.samples(samples)
    return kept + _combined([s for s in kept if s.rank], state)
