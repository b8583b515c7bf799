"""Lines of one followed file (or one GPU/metrics read) into a store batch: parse, then the live path
(app/pipeline/rows.py) line by line, or the columnar path (app/pipeline/columns.py) for a backlog.

A catch-up is marked here too: lines a file gained while nobody read it (kvwatch down, host
unreachable). Their samples sit at the file's mtime (or their own stamps), never at the time of
reading; the `catchup` event says which byte range was read late and by when it had appeared, so a
reader of the series knows the step at that point was not observed as a rate. Stored once per backlog.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from kvwatch.app.metrics_catalog.names import COMPLETIONS
from kvwatch.app.pipeline.rows import LiveState, Rows, live_rows, record_time, with_host_samples
from kvwatch.app.pipeline.stamps import SourceClock
from kvwatch.app.store.base import Batch, EventRow, Sample
from kvwatch.collectors.base import Line
from kvwatch.collectors.lines import TailState
from kvwatch.parsers import LineParser, Record, create_parser

PARSER_OF_SOURCE = {"server_log": "auto", "client_log": "client", "gpu": "nvidia-smi", "metrics": "prometheus"}
METRICS_PREFIX = "metrics_"  # /metrics scrapes get their own series names: the log's stay the log's
CATCHUP_EVENT = "catchup"
# A delivery this long is a backlog read in large pieces, not lines as they come: the columnar path
# (app/pipeline/columns.py) takes it.
BULK_LINES = 4096


def parser_for(source: str) -> LineParser | None:
    name = PARSER_OF_SOURCE.get(source)
    return create_parser(name) if name else None


class BatchBuilder:
    """Batches of one host. `live`: the host's state across batches (one aggregator, so a host series
    combines every rank's or output file's latest value); the sink passes its own, a test may not."""

    def __init__(self, host: str, live: LiveState | None = None) -> None:
        self.host = host
        self.live = live or LiveState()

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
            self.add_samples(batch, [Sample(COMPLETIONS, path, t, float(lines[-1].line_no))])
            return batch, len(lines), 0
        before = parser.health.unparsed
        if len(lines) >= BULK_LINES:  # a backlog: columns, combined over the batch at once
            from kvwatch.app.pipeline.columns import bulk_batch  # pyarrow: imported for a first backlog

            count = bulk_batch(batch, parser, lines, self.live, clock, now)
            return batch, count, parser.health.unparsed - before
        # Each record's time is taken as its line comes (a live line may move the zone's offset for the
        # next), then a step of the host's clock is asked about before anything of the delivery counts.
        staged: list[tuple[Record, float, float]] = []  # record, when its line appeared, its time
        for line in self.live.bounds.lines(lines):
            records = parser.feed(line.line_no, line.text)
            if records:
                appeared = clock.appeared_at(line.offset, now) if clock else now
                if clock is not None and clock.is_live(line.offset):
                    clock.follow_live(records, now)
                staged += [(r, appeared, record_time(r, appeared, clock)) for r in records]
        self.live.stamps.precheck(source, path, [(int(r.get("line", 0) or 0), t) for r, _, t in staged])
        for record, appeared, t in staged:
            _extend(batch, live_rows([record], self.live, source, path, now=appeared, clock=_Timed(t)))
        count = len(staged)
        return batch, count, parser.health.unparsed - before

    def from_records(self, source: str, path: str, records: Iterable[Record], prefix: str = "",
                     clock: SourceClock | None = None) -> Batch:
        batch = Batch(self.host, source, path)
        _extend(batch, live_rows(records, self.live, source, path, clock=clock, prefix=prefix))
        return batch

    def add_samples(self, batch: Batch, samples: list[Sample]) -> None:
        """Samples made outside a parser (an output file's line count) with the host values they give."""
        batch.samples.extend(with_host_samples(samples, self.live))


class _Timed:
    """A record's time, taken before: what `live_rows` asks the source's clock for."""

    def __init__(self, t: float) -> None:
        self.t = t

    def record_time(self, record: Record, read_at: float) -> float:
        return self.t


def _extend(batch: Batch, rows: Rows) -> None:
    batch.samples.extend(rows.samples)
    batch.events.extend(rows.events)


def mark_catch_up(batch: Batch, clock: SourceClock, lines: list[Line]) -> None:
    backlog = clock.backlog
    if backlog is None or not backlog.behind or clock.backlog_marked:
        return
    if lines[0].offset > backlog.size:  # only lines written after the connect: live, not a backlog
        return
    clock.backlog_marked = True
    appeared_by = backlog.mtime - clock.skew_correction_s
    data = {"path": batch.path, "from_offset": backlog.resume_offset,
            "to_offset": backlog.size, "bytes": backlog.size - backlog.resume_offset, "appeared_by": appeared_by}
    batch.events.append(EventRow(CATCHUP_EVENT, appeared_by, lines[0].line_no, data))
