"""Lines of one followed file (or one GPU/metrics read) into a store batch: parse, rows, aggregate."""

from __future__ import annotations

import time
from collections.abc import Iterable

from kvwatch.app.pipeline.bounds import HostBounds
from kvwatch.app.pipeline.catchup import BULK_LINES
from kvwatch.app.pipeline.rows import RankAggregator, record_rows
from kvwatch.app.pipeline.stamps import SourceClock
from kvwatch.app.pipeline.watermark import StampGuard
from kvwatch.app.store.base import Batch, Sample
from kvwatch.collectors.base import Line
from kvwatch.collectors.tail_state import TailState
from kvwatch.parsers import LineParser, Record, create_parser

PARSER_OF_SOURCE = {"server_log": "auto", "client_log": "client", "gpu": "nvidia-smi", "metrics": "prometheus"}
METRICS_PREFIX = "metrics_"  # /metrics scrapes get their own series names: the log's stay the log's


def parser_for(source: str) -> LineParser | None:
    name = PARSER_OF_SOURCE.get(source)
    return create_parser(name) if name else None


class BatchBuilder:
    """Per host: one aggregator, so a host series combines every rank's (or output file's) latest value."""

    def __init__(self, host: str, bounds: HostBounds | None = None) -> None:
        self.host = host
        self.aggregator = RankAggregator()
        self.bounds = bounds or HostBounds()
        self.stamps = StampGuard()

    def from_lines(self, source: str, path: str, parser: LineParser | None, lines: list[Line],
                   state: TailState | None, clock: SourceClock | None = None) -> tuple[Batch, int, int]:
        """The batch for these lines with the tail's state after them; plus records and unparsed counts.
        `parser` None: output files, whose complete lines are counted, never parsed.
        `clock`: the file's zone, skew and backlog (naive stamps, and when unstamped lines appeared)."""
        batch = Batch(self.host, source, path, state=state.as_dict() if state else None)
        if not lines:  # a new generation without lines yet: only the state moves
            return batch, 0, 0
        now = time.time()
        if parser is None:
            t = clock.appeared_at(lines[-1].offset, now) if clock else now
            self.add_samples(batch, [Sample("completions", path, t, float(lines[-1].line_no))])
            return batch, len(lines), 0
        before = parser.health.unparsed
        if len(lines) >= BULK_LINES:  # a backlog: columns, combined over the batch at once
            from kvwatch.app.pipeline.columns import bulk_batch  # pyarrow: imported for a first backlog

            count = bulk_batch(batch, parser, lines, self.bounds, self.aggregator, clock, now)
            return batch, count, parser.health.unparsed - before
        count = 0
        for line in self.bounds.lines(lines):
            records = parser.feed(line.line_no, line.text)
            if records:
                appeared = clock.appeared_at(line.offset, now) if clock else now
                if clock is not None and clock.is_live(line.offset):
                    clock.follow_live(records, now)
                self.add_records(batch, records, now=appeared, clock=clock)
                count += len(records)
        return batch, count, parser.health.unparsed - before

    def from_records(self, source: str, path: str, records: Iterable[Record], prefix: str = "",
                     clock: SourceClock | None = None) -> Batch:
        batch = Batch(self.host, source, path)
        self.add_records(batch, records, prefix, clock=clock)
        return batch

    def add_records(self, batch: Batch, records: Iterable[Record], prefix: str = "", now: float | None = None,
                    clock: SourceClock | None = None) -> None:
        for record in records:
            samples, events = record_rows(self.bounds.record(record), now, clock)
            read_at = now if now is not None else time.time()
            samples, events = self.stamps.filter(batch.source, batch.path, int(record.get("line", 0) or 0),
                                                 samples, events, read_at)
            if prefix:
                samples = [s._replace(metric=prefix + s.metric) for s in samples]
            self.add_samples(batch, samples)
            batch.events.extend(events)

    def add_samples(self, batch: Batch, samples: list[Sample]) -> None:
        kept = self.bounds.samples(samples)
        batch.samples.extend(kept)
        batch.samples.extend(self.bounds.samples(self.aggregator.host_samples(kept)))
