"""The app's sink for a host's lines: parse them, commit records with the tail's offset, publish.

`collectors.host.HostFollower` hands it complete lines and the TailState after them. One store
transaction holds both, so a crash at any point re-reads from the committed offset and stores
nothing twice. A commit that fails raises: the follower rewinds the tail and reads the same lines
again (the parser has seen them: a traceback it held may come out twice, never a sample).

Where a published point stands among the host's points of the same stamp (`StampRuns`): SGLang
stamps whole seconds, so a fast decode (or a short --decode-log-interval) logs several lines in one
second: distinct samples with equal stamps. A page that holds some of a stamp's points (from history)
and is streamed more of them tells old from new by position, not by time: the stream says, per
metric, how many points of its first point's stamp came before it (`stamp_index`). A stamp's points
are counted in publishing order, which is the store's commit order, as a run of consecutive equal
stamps (the page counts the same way: the points its trace ends with). A backlog batch publishes its
series thinned (PUBLISH_POINTS): its positions count the published points, so at the one stamp where
a backlog meets live lines a page may draw a point twice or miss one; a page open during a catch-up
redraws from history when it compacts anyway. Stamps are compared in whole milliseconds, as the page
holds them (a JavaScript Date truncates): output-file lines stamped 0.2 ms apart are one stamp on the
page, so they are one stamp here too.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from kvwatch.app.bus import EventBus
from kvwatch.app.metrics_catalog.names import COMPLETIONS
from kvwatch.app.pipeline.batches import METRICS_PREFIX, BatchBuilder, mark_catch_up, parser_for
from kvwatch.app.pipeline.rows import LiveState
from kvwatch.app.pipeline.stamps import SourceClocks
from kvwatch.app.runs.news import RunNews
from kvwatch.app.store.base import Batch, Store
from kvwatch.collectors.base import Line
from kvwatch.collectors.clock import FileProbe
from kvwatch.collectors.clock_infer import HostClock
from kvwatch.collectors.lines import TailState
from kvwatch.collectors.sinks import ClockStepSuspected, Delivered
from kvwatch.parsers import LineParser, Record, create_parser

log = logging.getLogger(__name__)
PUBLISHED_EVENTS = {"capacity": "run", "server_args": "run", "event": "event"}
PUBLISH_POINTS = 1000  # per series and backlog batch on the stream; the store has them all. Encoding them
# is most of a batch's cost beyond storing it: 2,000 a 4 MiB read made a catch-up 10 % slower (bench/attach_history.py)
SHORT_RUN = 32  # up to this many points a metric, stamps are counted one by one (numpy costs more)
F64 = npt.NDArray[np.float64]


def page_stamp(t: float) -> int:
    """A stamp as the page's Date holds it: whole milliseconds, truncated."""
    return math.trunc(t * 1000)


class StampRuns:
    """Per metric: the newest published stamp and how many points carried it in a row."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[int | None, int]] = {}

    def advance(self, metric: str, times: Sequence[float] | F64) -> int:
        """The count of earlier points at `times[0]`'s stamp; then these points are counted too."""
        if not len(times):
            return 0
        if len(times) > SHORT_RUN:  # a backlog batch's points: counted in arrays
            return self._advance_many(metric, np.trunc(np.asarray(times, dtype=np.float64) * 1000).astype(np.int64))
        stamp, count = self._last.get(metric, (None, 0))
        before = count if page_stamp(times[0]) == stamp else 0
        for t in times:
            if page_stamp(t) == stamp:
                count += 1
            else:
                stamp, count = page_stamp(t), 1
        self._last[metric] = (stamp, count)
        return before

    def _advance_many(self, metric: str, stamps: npt.NDArray[np.int64]) -> int:
        stamp, count = self._last.get(metric, (None, 0))
        before = count if stamps[0] == stamp else 0
        last = int(stamps[-1])
        other = np.flatnonzero(stamps != last)
        # the last run starts after the last point of another stamp, or continues the earlier one
        count = len(stamps) - 1 - int(other[-1]) if len(other) else (count if last == stamp else 0) + len(stamps)
        self._last[metric] = (last, count)
        return before


def _flat(parts: list[Any]) -> Sequence[float] | F64:
    """Floats (live samples) and arrays (backlog columns) as one sequence, in order."""
    if not any(isinstance(part, np.ndarray) for part in parts):
        return parts
    return np.concatenate([part if isinstance(part, np.ndarray) else np.array([part]) for part in parts])


class StoreSink:
    def __init__(self, host: str, store: Store, bus: EventBus, timezone: str | None = None) -> None:
        self.host, self.store, self.bus = host, store, bus
        self.builder = BatchBuilder(host)
        self.clocks = SourceClocks(timezone)
        self._parsers: dict[tuple[str, str], LineParser | None] = {}
        self._gpu_parser = create_parser("nvidia-smi")
        self._stamps = StampRuns()
        self._run_news = RunNews(host)

    @property
    def live(self) -> LiveState:
        """The host's aggregator, bounds and watermarks (the builder's): health reads them."""
        return self.builder.live

    def load_state(self, host: str, kind: str, path: str) -> TailState | None:
        state = TailState.from_dict(self.store.load_state(host, kind, path))
        if kind == "outputs":  # the host's completions add up every output file's line count
            self.live.aggregator.seed(COMPLETIONS, path, float(state.line_no if state else 0))
        self._parsers[(kind, path)] = parser_for(kind)
        return state

    def observe_clock(self, kind: str, path: str, host: HostClock | None, probe: FileProbe | None,
                      resume_offset: int = 0) -> dict[str, Any]:
        """The host loop's clock facts for a source (on every connect); returns what health shows."""
        return self.clocks.observe(kind, path, host, probe, resume_offset)

    def retime(self, host: HostClock) -> None:
        """The host's clock read again during a connection (collectors/host_clock.py)."""
        self.clocks.retime(host)

    def clock_suspect(self) -> bool:
        """Lines wait for the host's clock to be read again (a step of it is suspected)."""
        return self.live.stamps.suspect

    def clock_checked(self) -> None:
        self.live.stamps.clock_checked()

    def clock_report(self, kind: str, path: str) -> dict[str, Any] | None:
        clock = self.clocks.get(kind, path)
        return clock.report() if clock is not None else None

    def deliver(self, host: str, kind: str, path: str, lines: list[Line], state: TailState | None) -> Delivered:
        if kind in ("gpu", "metrics"):
            records, unparsed = self._parse_live(kind, lines)
            # /metrics stamps are epoch milliseconds (UTC already): no zone to apply
            clock = self.clocks.live(kind) if kind == "gpu" else None
            prefix = METRICS_PREFIX if kind == "metrics" else ""
            self._commit(self.builder.from_records(kind, path, records, prefix=prefix, clock=clock))
            return Delivered(len(records), unparsed)
        parser = self._parsers.get((kind, path))
        clock = self.clocks.get(kind, path)
        saved = self.live.stamps.snapshot()
        unknown_before = parser.health.unknown_keys if parser is not None else 0
        try:
            batch, n_records, unparsed = self.builder.from_lines(kind, path, parser, lines, state, clock)
        except ClockStepSuspected:  # nothing of these lines is stored: they come again
            self.live.stamps.restore(saved)
            raise
        if clock is not None and lines:
            mark_catch_up(batch, clock, lines)
        self._commit(batch)
        unknown = parser.health.unknown_keys - unknown_before if parser is not None else 0
        return Delivered(n_records, unparsed, unknown)

    def idle(self, host: str, kind: str, path: str) -> None:
        """A parser holds a traceback until the next line; an idle file means it has ended."""
        parser = self._parsers.get((kind, path))
        records = parser.flush() if parser is not None else []
        if records:
            try:
                self._commit(self.builder.from_records(kind, path, records, clock=self.clocks.get(kind, path)))
            except Exception as exc:  # lines already committed; only this late record is lost
                log.error("%s: storing the end of a traceback in %s failed: %s", self.host, path, exc)

    def _parse_live(self, kind: str, lines: list[Line]) -> tuple[list[Record], int]:
        # a /metrics scrape is a document of its own: a fresh parser, flushed at its end
        parser = self._gpu_parser if kind == "gpu" else create_parser("prometheus")
        before = parser.health.unparsed
        records = [r for line in lines for r in parser.feed(line.line_no, line.text)]
        if kind == "metrics":
            records += parser.flush()
        return records, parser.health.unparsed - before

    def _commit(self, batch: Batch) -> None:
        self.store.commit(batch)
        self._publish(batch)

    def _publish(self, batch: Batch) -> None:
        points: dict[str, list[list[float]]] = {}
        times: dict[str, list[Any]] = {}  # per metric: the points' times, floats and arrays in points' order
        for sample in batch.samples:
            if not sample.rank:
                points.setdefault(sample.metric, []).append([sample.t, sample.v])
                times.setdefault(sample.metric, []).append(sample.t)
        for col in batch.columns:  # a backlog batch: its history thinned (the page redraws it downsampled)
            if not col.rank and len(col.t):
                keep = np.unique(np.linspace(0, len(col.t) - 1, min(len(col.t), PUBLISH_POINTS)).astype(np.intp))
                t = col.t[keep]
                points.setdefault(col.metric, []).extend(
                    [t, v] for t, v in zip(t.tolist(), col.v[keep].tolist(), strict=True))
                times.setdefault(col.metric, []).append(t)
        if points:
            # stamp_index: the page tells a new point from one its history holds by position in its stamp
            first = {metric: self._stamps.advance(metric, _flat(times[metric])) for metric in points}
            self.bus.publish("sample", {"host": self.host, "points": points, "stamp_index": first})
        for event in batch.events:
            if event.kind in PUBLISHED_EVENTS:
                data = {"host": self.host, "kind": event.kind, "t": event.t, **event.data}
                self.bus.publish(PUBLISHED_EVENTS[event.kind], data)
        for news in self._run_news.after(batch):
            self.bus.publish("run", news)
