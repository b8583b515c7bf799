"""Lines of one followed file (or one GPU/metrics read) into a store batch: parse, rows, aggregate."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass

from app.pipeline.health import SourceHealth
from app.pipeline.rows import RankAggregator, record_rows
from app.store.base import Batch, Sample
from collectors.base import Line
from collectors.tail import Tail
from collectors.tail_state import TailState
from parsers import LineParser, Record, create_parser

PARSER_OF_SOURCE = {"server_log": "auto", "client_log": "client", "gpu": "nvidia-smi", "metrics": "prometheus"}
METRICS_PREFIX = "metrics_"  # /metrics scrapes get their own series names: the log's stay the log's


@dataclass(slots=True)
class FollowedFile:
    source: str
    tail: Tail
    parser: LineParser | None  # None for output files: their lines are counted, not parsed
    health: SourceHealth
    committed: TailState | None = None  # what the store has: the tail rewinds here if a commit fails


def parser_for(source: str) -> LineParser | None:
    name = PARSER_OF_SOURCE.get(source)
    return create_parser(name) if name else None


def health_key(source: str, path: str) -> str:
    return f"outputs:{os.path.basename(os.path.dirname(path))}" if source == "outputs" else source


class BatchBuilder:
    """Per host: one aggregator, so a host series combines every rank's (or output file's) latest value."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.aggregator = RankAggregator()

    def from_lines(self, followed: FollowedFile, lines: list[Line]) -> tuple[Batch, int, int]:
        """The batch for these lines, with the tail's state after them; plus records and unparsed counts."""
        state = followed.tail.state
        batch = Batch(self.host, followed.source, followed.tail.path, state=state.as_dict() if state else None)
        if followed.parser is None:  # output files: count complete lines, never parse them
            sample = Sample("completions", followed.tail.path, time.time(), float(lines[-1].line_no))
            self.add_samples(batch, [sample])
            return batch, len(lines), 0
        before = followed.parser.health.unparsed
        records: list[Record] = []
        for line in lines:
            records.extend(followed.parser.feed(line.line_no, line.text))
        self.add_records(batch, records)
        return batch, len(records), followed.parser.health.unparsed - before

    def from_records(self, source: str, path: str, records: Iterable[Record], prefix: str = "") -> Batch:
        batch = Batch(self.host, source, path)
        self.add_records(batch, records, prefix)
        return batch

    def add_records(self, batch: Batch, records: Iterable[Record], prefix: str = "") -> None:
        for record in records:
            samples, events = record_rows(record)
            if prefix:
                samples = [s._replace(metric=prefix + s.metric) for s in samples]
            self.add_samples(batch, samples)
            batch.events.extend(events)

    def add_samples(self, batch: Batch, samples: list[Sample]) -> None:
        batch.samples.extend(samples)
        batch.samples.extend(self.aggregator.host_samples(samples))
