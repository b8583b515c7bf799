"""The live path: one host's records to store rows, with the host's own series combined as they come.

`live_rows` is the whole per-record step: bound the record's fields, make its samples or event
(app/pipeline/rows.py), check its stamp against the source's watermark (app/pipeline/watermark.py),
prefix /metrics series, then keep only series the host may still add (app/pipeline/bounds.py) and
follow each ranked sample with the host's value combined by the metric catalog's rule
(app/pipeline/aggregate.py). What it remembers between deliveries is all in `LiveState`, passed in,
so a test (or another caller) sees every input and every effect.

The backlog path (app/pipeline/columns.py) shares the state's bounds and aggregator, not this
function: it combines a whole batch at once.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from kvwatch.app.pipeline.aggregate import RankAggregator
from kvwatch.app.pipeline.bounds import HostBounds
from kvwatch.app.pipeline.rows import RecordClock, record_rows
from kvwatch.app.pipeline.watermark import StampGuard
from kvwatch.app.store.base import EventRow, Sample
from kvwatch.parsers import Record

__all__ = ["LiveState", "Rows", "live_rows", "with_host_samples"]


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
    for record in records:
        read_at = time.time() if now is None else now
        samples, events = record_rows(state.bounds.record(record), read_at, clock)
        line = int(record.get("line", 0) or 0)
        samples, events = state.stamps.filter(source, path, line, samples, events, read_at)
        if prefix:
            samples = [s._replace(metric=prefix + s.metric) for s in samples]
        # per record, not per delivery: a host value follows the part samples it combines
        rows.samples.extend(with_host_samples(samples, state))
        rows.events.extend(events)
    return rows


def with_host_samples(samples: list[Sample], state: LiveState) -> list[Sample]:
    """The samples the host's series bound admits, then the host values their ranked ones combine to."""
    kept = state.bounds.samples(samples)
    return kept + state.bounds.samples(state.aggregator.host_samples(kept))
