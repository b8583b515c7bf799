"""One thread per host: poll its files, parse, commit records with offsets, publish what is new.

A failing host only ever affects its own thread: errors move it to `reconnecting` with capped
exponential backoff and jitter, and the others go on.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from app.bus import EventBus
from app.config import HostConfig
from app.pipeline.health import HostHealth, SourceHealth
from app.pipeline.rows import RankAggregator, record_rows
from app.store.base import Batch, Sample, Store
from collectors.base import CollectorError, HostKeyRejected, Line, Transport
from collectors.tail import Tail
from collectors.tail_state import TailState
from parsers import LineParser, Record, create_parser

log = logging.getLogger(__name__)
BACKOFF_MAX_S = 60.0


@dataclass(slots=True)
class FollowedFile:
    source: str
    tail: Tail
    parser: LineParser | None  # None for output files: their lines are counted, not parsed
    health: SourceHealth


class StoreWriteFailed(Exception):
    """A commit to the store failed; nothing of the batch was stored."""


class HostCollector:
    def __init__(
        self,
        host: HostConfig,
        store: Store,
        bus: EventBus,
        open_transport: Callable[[HostConfig], Transport],
        interval: float = 0.5,
    ) -> None:
        self.host = host
        self.store = store
        self.bus = bus
        self.open_transport = open_transport
        self.interval = interval
        self.health = HostHealth()
        self.files: dict[tuple[str, str], FollowedFile] = {}
        # One per host: a host series combines every rank's (or every output file's) latest value.
        self.aggregator = RankAggregator()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"collector-{host.name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)
        self.health.set_state("stopped")

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                transport = self.open_transport(self.host)
            except HostKeyRejected as exc:
                # A changed or unknown key is a security event: never retried on our own.
                self.health.set_state("failed", f"host key rejected: {exc}")
                self.bus.publish("host", {"host": self.host.name, **self.health.as_dict()})
                return
            except CollectorError as exc:
                failures += 1
                self._wait_backoff(failures, exc)
                continue
            failures = 0
            self.health.set_state("up")
            try:
                self._follow(transport)
            except CollectorError as exc:
                failures += 1
                self._wait_backoff(failures, exc)
            except StoreWriteFailed as exc:
                # The tails read past what was committed: start them again from the stored offsets.
                self.files.clear()
                failures += 1
                self._wait_backoff(failures, exc)
            finally:
                transport.close()

    def _wait_backoff(self, failures: int, exc: Exception) -> None:
        self.health.reconnects += 1
        self.health.set_state("reconnecting", str(exc))
        self.bus.publish("host", {"host": self.host.name, **self.health.as_dict()})
        delay = min(BACKOFF_MAX_S, 0.5 * 2 ** min(failures, 10)) * random.uniform(0.5, 1.0)
        log.warning("%s: %s; retrying in %.1f s", self.host.name, exc, delay)
        self._stop.wait(delay)

    def _follow(self, transport: Transport) -> None:
        while not self._stop.is_set():
            self._discover(transport)
            for followed in list(self.files.values()):
                while self._poll_once(followed):
                    pass
            self._stop.wait(self.interval)

    def _discover(self, transport: Transport) -> None:
        wanted = [("server_log", self.host.server_log)]
        if self.host.client_log:
            wanted.append(("client_log", self.host.client_log))
        for pattern in self.host.outputs:
            wanted.extend(("outputs", path) for path in transport.glob(pattern))
        for source, path in wanted:
            key = (source, path)
            if key in self.files:
                self.files[key].tail.transport = transport
                continue
            state = TailState.from_dict(self.store.load_state(self.host.name, source, path))
            if source == "outputs":
                self.aggregator.seed("completions", path, float(state.line_no))
            self.files[key] = FollowedFile(
                source=source,
                tail=Tail(transport, path, source, state),
                parser=_parser_for(source),
                health=self.health.sources.setdefault(
                    source if source != "outputs" else f"outputs:{os.path.basename(os.path.dirname(path))}",
                    SourceHealth(path=path),
                ),
            )

    def _poll_once(self, followed: FollowedFile) -> bool:
        lines = followed.tail.poll()
        if not lines:
            self._flush_idle(followed)
            return False
        state = followed.tail.state
        batch = Batch(self.host.name, followed.source, followed.tail.path, state=state.as_dict() if state else None)
        records, unparsed = self._to_rows(followed, lines, batch)
        self._commit(batch)
        nbytes = sum(len(line.text) + 1 for line in lines)
        followed.health.saw(len(lines), nbytes, records, unparsed)
        self._publish(batch)
        return True

    def _flush_idle(self, followed: FollowedFile) -> None:
        """A parser holds a traceback until the next line; an idle file means it has ended."""
        if followed.parser is None:
            return
        records = followed.parser.flush()
        if records:
            batch = Batch(self.host.name, followed.source, followed.tail.path)
            self._add_records(records, batch)
            self._commit(batch)
            self._publish(batch)

    def _commit(self, batch: Batch) -> None:
        try:
            self.store.commit(batch)
        except Exception as exc:  # sqlite3 / psycopg: disk full, read-only, connection lost
            raise StoreWriteFailed(f"store write failed: {exc}") from exc

    def _add_records(self, records: list[Record], batch: Batch) -> None:
        for record in records:
            samples, events = record_rows(record)
            batch.samples.extend(samples)
            batch.samples.extend(self.aggregator.host_samples(samples))
            batch.events.extend(events)

    def _to_rows(self, followed: FollowedFile, lines: list[Line], batch: Batch) -> tuple[int, int]:
        if followed.parser is None:  # output files: count complete lines, never parse them
            last = lines[-1]
            batch.samples.append(Sample("completions", followed.tail.path, time.time(), float(last.line_no)))
            batch.samples.extend(self.aggregator.host_samples(batch.samples))
            return len(lines), 0
        before = followed.parser.health.unparsed
        records: list[Record] = []
        for line in lines:
            records.extend(followed.parser.feed(line.line_no, line.text))
        self._add_records(records, batch)
        return len(records), followed.parser.health.unparsed - before

    def _publish(self, batch: Batch) -> None:
        host_samples = [s for s in batch.samples if not s.rank]
        if host_samples:
            points: dict[str, list[list[float]]] = {}
            for sample in host_samples:
                points.setdefault(sample.metric, []).append([sample.t, sample.v])
            self.bus.publish("sample", {"host": self.host.name, "points": points})
        for event in batch.events:
            if event.kind in ("capacity", "server_args", "event"):
                self.bus.publish("run" if event.kind != "event" else "event",
                                 {"host": self.host.name, "kind": event.kind, "t": event.t, **event.data})


def _parser_for(source: str) -> LineParser | None:
    if source == "outputs":
        return None
    if source == "client_log":
        return create_parser("client")
    return create_parser("auto")
