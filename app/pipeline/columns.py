"""A backlog's lines into a columnar batch: one array pair per series instead of a row per sample.

When a delivery is a backlog (at least BULK_LINES lines: the tail read a large piece of a file that
was already there), the records' numeric fields are gathered per (metric, rank) into lists, the
host's series are combined from the ranks over the whole batch at once (app/pipeline/combine_bulk.py)
and the store writes each series as one chunk row (app/store/chunks.py). Events stay rows. The live
path (small deliveries) is untouched: it keeps its per-line latency.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from kvwatch.app.lean_pyarrow import pyarrow_without_pandas
from kvwatch.app.pipeline.batches import BULK_LINES
from kvwatch.app.pipeline.bounds import HostBounds
from kvwatch.app.pipeline.combine_bulk import PartSeries, combine_batch
from kvwatch.app.pipeline.rows import (
    NOT_SERIES,
    PROGRESS_METRICS,
    SAMPLE_KINDS,
    LiveState,
    RankAggregator,
    metric_name,
    rank_of,
    record_rows,
    record_time,
)
from kvwatch.app.pipeline.stamps import SourceClock
from kvwatch.app.store.base import Batch, Sample
from kvwatch.app.store.chunks import SeriesColumns
from kvwatch.collectors.base import Line
from kvwatch.parsers import LineParser, Record
from kvwatch.parsers.auto import AutoParser
from kvwatch.parsers.columnar import ColumnarSglang
from kvwatch.parsers.sglang import SglangParser

__all__ = ["BULK_LINES", "PARSE_SLICE", "bulk_batch"]
# This module is imported for a process's first backlog. The columnar path hands pyarrow plain lists:
# its first array would import pandas (~85 MB resident) only to ask whether it was given a pandas object.
pyarrow_without_pandas()
PARSE_SLICE = 16_384  # lines parsed together (Arrow arrays of a slice, not of a whole 4 MiB read)
FIELDS_MAX = 1024  # positions: a record's fields are numbered below this (bounds keep 64 + 4)
F64 = npt.NDArray[np.float64]


class _Series:
    """A series' pieces: arrays from fast-path tables and values from Python records."""

    __slots__ = ("seq", "t", "v")

    def __init__(self) -> None:
        self.t: list[F64] = []
        self.v: list[F64] = []
        self.seq: list[npt.NDArray[np.int64]] = []

    def arrays(self) -> tuple[F64, F64, npt.NDArray[np.int64]]:
        seq = np.concatenate(self.seq)
        order = np.argsort(seq, kind="stable")  # arrival order: line, then field
        return np.concatenate(self.t)[order], np.concatenate(self.v)[order], seq[order]


class ColumnBuilder:
    """One batch's samples per (metric, rank); a sample's position is line * FIELDS_MAX + field index."""

    def __init__(self, bounds: HostBounds) -> None:
        self.bounds = bounds
        self.series: dict[tuple[str, str], _Series | None] = {}  # None: dropped by max_series

    def _get(self, metric: str, rank: str) -> _Series | None:
        key = (metric, rank)
        if key not in self.series:
            self.series[key] = self._admit(metric, rank)
        return self.series[key]

    def add(self, record: dict[str, Any], t: float) -> None:
        kind = record["kind"]
        rank = rank_of(record)
        base = int(record.get("line", 0)) * FIELDS_MAX
        for index, (key, value) in enumerate(record.items()):
            if key in NOT_SERIES or value.__class__ is bool or not isinstance(value, int | float):
                continue
            metric = PROGRESS_METRICS.get(key, key) if kind == "progress" else metric_name(kind, key)
            self._put(metric, rank, np.array([t]), np.array([float(value)]), np.array([base + index]))

    def _put(self, metric: str, rank: str, t: F64, v: F64, seq: npt.NDArray[np.int64]) -> None:
        series = self._get(metric, rank)
        if series is None:
            self.bounds.count_dropped(len(t))
            return
        series.t.append(t)
        series.v.append(v)
        series.seq.append(seq)

    def add_table(self, table: pa.Table, t: F64) -> None:
        """A fast-path table (one record shape: decode or prefill lines) with its rows' UTC times."""
        kind = str(table.column("kind")[0].as_py())
        base = table.column("line").to_numpy().astype(np.int64) * FIELDS_MAX
        ranks = _ranks(table.column("tags"))
        groups = [(rank, np.flatnonzero(ranks == rank)) for rank in np.unique(ranks)]
        for index, name in enumerate(table.column_names):
            column = table.column(name)
            if name in NOT_SERIES or not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
                continue
            values = column.to_numpy().astype(np.float64)
            metric = metric_name(kind, name)
            for rank, rows in groups:
                self._put(metric, str(rank), t[rows], values[rows], base[rows] + index)

    def _admit(self, metric: str, rank: str) -> _Series | None:
        return _Series() if self.bounds.samples([Sample(metric, rank, 0.0, 0.0)]) else None

    def columns(self, aggregator: RankAggregator) -> list[SeriesColumns]:
        parts: list[PartSeries] = []
        out: list[SeriesColumns] = []
        for (metric, rank), series in self.series.items():
            if series is None:
                continue
            t, v, seq = series.arrays()
            col = SeriesColumns(metric, rank, t, v)
            out.append(col)
            if rank:
                parts.append(PartSeries(col, seq))
        for host_col in combine_batch(aggregator, parts):
            admitted = self.bounds.samples([Sample(host_col.metric, "", 0.0, 0.0)])
            if admitted:
                out.append(host_col)
            else:
                self.bounds.count_dropped(len(host_col.t))
        return out


def bulk_batch(batch: Batch, parser: LineParser, lines: list[Line], live: LiveState,
               clock: SourceClock | None, now: float) -> int:
    """Fill `batch` (columns and events) from a backlog's lines; returns the number of records.
    `live`: the host's bounds and aggregator, the same the live path (app/pipeline/rows.py) uses."""
    builder = ColumnBuilder(live.bounds)
    kept = live.bounds.lines(lines)
    count = 0
    for start in range(0, len(kept), PARSE_SLICE):  # parsed a slice at a time: bounded intermediates
        count += _parse_slice(batch, builder, parser, kept[start:start + PARSE_SLICE], clock, now)
    batch.columns.extend(builder.columns(live.aggregator))
    return count


def _parse_slice(batch: Batch, builder: ColumnBuilder, parser: LineParser, kept: list[Line],
                 clock: SourceClock | None, now: float) -> int:
    tables, records = fast_records(parser, kept)
    for table in tables:
        builder.add_table(table, table_times(table.column("ts"), clock, now))
    offsets = {line.line_no: line.offset for line in kept} if records else {}
    for raw in records:
        record = builder.bounds.record(raw)
        offset = offsets.get(int(record.get("line", 0)))
        appeared = clock.appeared_at(offset, now) if clock and offset is not None else now
        if record.get("kind") in SAMPLE_KINDS:
            builder.add(record, record_time(record, appeared, clock))
        else:
            batch.events.extend(record_rows(record, appeared, clock)[1])
    return len(records) + sum(len(table) for table in tables)


def fast_records(parser: LineParser, lines: list[Line]) -> tuple[list[pa.Table], list[Record]]:
    """SGLang lines through the columnar path (parsers/columnar.py) when the lines are consecutive;
    everything else, and every other log, line by line through the parser."""
    records: list[Record] = []
    fed = 0
    while isinstance(parser, AutoParser) and parser.chosen is None and fed < len(lines):
        records += parser.feed(lines[fed].line_no, lines[fed].text)
        fed += 1
    rest = lines[fed:]
    sglang = parser.delegate if isinstance(parser, AutoParser) else parser
    consecutive = bool(rest) and rest[-1].line_no - rest[0].line_no == len(rest) - 1
    if isinstance(sglang, SglangParser) and consecutive:
        tables, more = ColumnarSglang(sglang).block(rest[0].line_no, pa.array([ln.text for ln in rest], pa.string()))
        return tables, records + more
    for line in rest:
        records += parser.feed(line.line_no, line.text)
    return [], records


def table_times(stamps: pa.ChunkedArray, clock: SourceClock | None, now: float) -> F64:
    """Each row's UTC epoch. Stamps are read as wall epochs at once; the source's clock converts one
    wall hour at a time when the zone's offset holds over it (always, but in a DST change's hour)."""
    try:
        wall = pc.strptime(stamps, format="%Y-%m-%dT%H:%M:%S", unit="s").cast(pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # other stamp layouts: one by one
        return _each_stamp(stamps, clock, now)
    walls = np.asarray(wall.to_numpy(), dtype=np.float64)
    if clock is None:
        return walls
    out = np.empty_like(walls)
    hours = walls // 3600
    for hour in np.unique(hours):
        rows = np.flatnonzero(hours == hour)
        first, last = float(walls[rows].min()), float(walls[rows].max())
        shift = clock.utc(first) - first
        if clock.utc(last) - last == shift:
            out[rows] = walls[rows] + shift - clock.skew_correction_s
        else:
            out[rows] = [clock.utc(w) - clock.skew_correction_s for w in walls[rows].tolist()]
    return out


def _each_stamp(stamps: pa.ChunkedArray, clock: SourceClock | None, now: float) -> F64:
    encoded = pc.dictionary_encode(stamps).combine_chunks()
    distinct = [record_time({"ts": ts}, now, clock) for ts in encoded.dictionary.to_pylist()]
    times: F64 = np.asarray(distinct, dtype=np.float64)[encoded.indices.to_numpy()]
    return times


def _ranks(tags: pa.ChunkedArray) -> npt.NDArray[np.str_]:
    """`DP<n>` per row from the tags column (struct with a DP field), "" where there is none."""
    if not pa.types.is_struct(tags.type) or tags.type.get_field_index("DP") < 0:
        return np.full(len(tags), "")
    dp = pc.struct_field(tags, "DP")
    text = pc.binary_join_element_wise("DP", pc.cast(dp, pa.string()), "")
    return np.asarray(pc.fill_null(text, "").to_numpy(zero_copy_only=False), dtype=np.str_)
