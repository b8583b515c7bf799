"""One thread per host: follow its files, parse, commit records with offsets, publish what is new.

A failing host only ever affects its own thread. Connection errors back off by kind (collectors'
`Backoff`: jittered and capped; at least a minute after an auth failure; a rejected host key is
never retried). A store that refuses a batch rewinds the tail to what the store has, so the lines
are read again on the next round and nothing is lost or stored twice.
"""

from __future__ import annotations

import logging
import posixpath
import threading
import time
from collections.abc import Callable

from app.bus import EventBus
from app.config import HostConfig
from app.controller.restart import run_log_path
from app.pipeline.batches import METRICS_PREFIX, BatchBuilder, FollowedFile, health_key, parser_for
from app.pipeline.health import HostHealth, SourceHealth
from app.store.base import Batch, Store
from collectors.backoff import Backoff
from collectors.base import CollectorError, FileStat, Transport
from collectors.gpu import GpuSampler
from collectors.metrics import scrape
from collectors.tail import UNKNOWN, Tail, Unknown
from collectors.tail_state import TailState
from collectors.watch import Watch
from parsers import LineParser, create_parser

log = logging.getLogger(__name__)
METRICS_EVERY_S = 5.0
# Globs (new output folders, a controller restart's new log) are re-expanded this often, not every
# round: over SSH each expansion is SFTP listings and stats, and 64 hosts waking on every appended
# line made that most of the collector's CPU and of its latency (bench/collect_fleet.py).
DISCOVER_EVERY_S = 2.0
PUBLISHED_EVENTS = {"capacity": "run", "server_args": "run", "event": "event"}


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
        self.builder = BatchBuilder(host.name)
        self._gpu_parser: LineParser = create_parser("nvidia-smi")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"collector-{host.name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)
        self.health.set_state("stopped")

    def _run(self) -> None:
        backoff = Backoff()
        while not self._stop.is_set():
            try:
                transport = self.open_transport(self.host)
            except CollectorError as exc:
                if not self._retry_later(backoff, exc):
                    return
                continue
            connected_at = time.monotonic()
            self.health.set_state("up")
            self._publish_health()
            try:
                self._follow(transport)
            except CollectorError as exc:
                backoff.connected_for(time.monotonic() - connected_at)
                if not self._retry_later(backoff, exc):
                    return
            except Exception as exc:  # a bug must not end collection for days: log it, retry
                log.exception("%s: collector failed unexpectedly", self.host.name)
                if not self._retry_later(backoff, exc):
                    return
            finally:
                transport.close()

    def _retry_later(self, backoff: Backoff, exc: Exception) -> bool:
        delay = backoff.next_delay(exc)
        if delay is None:
            # A changed or unknown key is a security event: a person must look, we never retry.
            self.health.set_state("failed", f"host key rejected: {exc}")
            self._publish_health()
            log.error("%s: host key rejected; not retrying: %s", self.host.name, exc)
            return False
        self.health.reconnects += 1
        self.health.set_state("reconnecting", str(exc))
        self._publish_health()
        log.warning("%s: %s; retrying in %.1f s", self.host.name, exc, delay)
        self._stop.wait(delay)
        return True

    def _publish_health(self) -> None:
        self.bus.publish("host", {"host": self.host.name, **self.health.as_dict()})

    def _follow(self, transport: Transport) -> None:
        watch: Watch | None = None
        gpu = GpuSampler(transport) if self.host.gpu else None
        next_scrape = next_discover = 0.0
        for followed in self.files.values():  # a new connection: every tail continues on it
            followed.tail.rebind(transport)
        try:
            while not self._stop.is_set():
                if time.monotonic() >= next_discover:
                    next_discover = time.monotonic() + DISCOVER_EVERY_S
                    self._discover(transport)
                    paths = sorted(f.tail.path for f in self.files.values())
                    if watch is None or watch.paths != paths:
                        if watch is not None:
                            watch.close()
                        watch = Watch(transport, paths)
                assert watch is not None
                self._poll_files(transport)
                if gpu is not None:
                    self._commit_gpu(gpu)
                if self.host.metrics_port and time.monotonic() >= next_scrape:
                    next_scrape = time.monotonic() + METRICS_EVERY_S
                    self._scrape_metrics(transport, self.host.metrics_port)
                if not (watch.active and watch.wait(self.interval)):
                    self._stop.wait(0 if watch.active else self.interval)
        finally:
            if watch is not None:
                watch.close()
            if gpu is not None:
                gpu.close()

    def _discover(self, transport: Transport) -> None:
        wanted = [("server_log", self.host.server_log)]
        if self.host.launch:  # every controller restart logs to a new file: follow those too
            wanted.extend(("server_log", path) for path in transport.glob(_run_logs(self.host)))
        if self.host.client_log:
            wanted.append(("client_log", self.host.client_log))
        for pattern in self.host.outputs:
            wanted.extend(("outputs", path) for path in transport.glob(pattern))
        for source, path in wanted:
            if (source, path) in self.files:
                continue
            state = TailState.from_dict(self.store.load_state(self.host.name, source, path))
            if source == "outputs":
                self.builder.aggregator.seed("completions", path, float(state.line_no))
            tail = Tail(transport, path, source, state)
            self.files[(source, path)] = FollowedFile(
                source=source,
                tail=tail,
                parser=parser_for(source),
                health=self.health.sources.setdefault(health_key(source, path), SourceHealth(path=path)),
                committed=tail.state,
            )

    def _poll_files(self, transport: Transport) -> None:
        stats = _stat_many(transport, [f.tail.path for f in self.files.values()])
        for followed in list(self.files.values()):
            stat: FileStat | Unknown | None = stats.get(followed.tail.path, UNKNOWN)
            # Again only while the tail is behind (a long file takes several reads): another poll
            # after it caught up would be one more stat round trip per file and wake-up, for nothing.
            while self._poll_once(followed, stat) and followed.tail.behind:
                stat = UNKNOWN  # the batched stat was for the first read

    def _poll_once(self, followed: FollowedFile, stat: FileStat | Unknown | None) -> bool:
        lines = followed.tail.poll(stat)
        if not lines:
            self._flush_idle(followed)
            return False
        batch, records, unparsed = self.builder.from_lines(followed, lines)
        if not self._commit(batch):
            followed.tail.rewind(followed.committed)
            return False
        followed.committed = followed.tail.state
        followed.health.path = followed.tail.path  # a controller restart moves the server to a new log
        followed.health.saw(len(lines), sum(len(line.text) + 1 for line in lines), records, unparsed)
        return True

    def _flush_idle(self, followed: FollowedFile) -> None:
        """A parser holds a traceback until the next line; an idle file means it has ended."""
        if followed.parser is not None:
            records = followed.parser.flush()
            if records:
                self._commit(self.builder.from_records(followed.source, followed.tail.path, records))

    def _commit_gpu(self, gpu: GpuSampler) -> None:
        lines = gpu.read(0.0)
        records = [r for line in lines for r in self._gpu_parser.feed(line.line_no, line.text)]
        if records:
            self._commit(self.builder.from_records("gpu", "nvidia-smi", records))
            self.health.sources.setdefault("gpu", SourceHealth(path="nvidia-smi")).saw(
                len(lines), sum(len(line.text) + 1 for line in lines), len(records), 0
            )

    def _scrape_metrics(self, transport: Transport, port: int) -> None:
        health = self.health.sources.setdefault("metrics", SourceHealth(path=f"127.0.0.1:{port}/metrics"))
        try:
            text = scrape(transport, port)
        except CollectorError as exc:  # the server may be down or restarting: not a host failure
            health.unparsed += 1
            self.health.last_error = f"/metrics: {exc}"
            return
        parser = create_parser("prometheus")
        records = [r for i, line in enumerate(text.splitlines(), 1) for r in parser.feed(i, line)]
        records += parser.flush()
        self._commit(self.builder.from_records("metrics", health.path, records, prefix=METRICS_PREFIX))
        health.saw(len(text.splitlines()), len(text), len(records), parser.health.unparsed)

    def _commit(self, batch: Batch) -> bool:
        try:
            self.store.commit(batch)
        except Exception as exc:  # full disk, locked or lost database: keep the offset, retry later
            self.health.last_error = f"store: {exc}"
            log.error("%s: store refused a batch of %s: %s", self.host.name, batch.source, exc)
            return False
        self._publish(batch)
        return True

    def _publish(self, batch: Batch) -> None:
        host_samples = [s for s in batch.samples if not s.rank]
        if host_samples:
            points: dict[str, list[list[float]]] = {}
            for sample in host_samples:
                points.setdefault(sample.metric, []).append([sample.t, sample.v])
            self.bus.publish("sample", {"host": self.host.name, "points": points})
        for event in batch.events:
            if event.kind in PUBLISHED_EVENTS:
                data = {"host": self.host.name, "kind": event.kind, "t": event.t, **event.data}
                self.bus.publish(PUBLISHED_EVENTS[event.kind], data)


def _run_logs(host: HostConfig) -> str:
    restart = host.tables.get("restart") or {}
    log_dir = str(restart.get("log_dir") or posixpath.dirname(host.server_log))
    return run_log_path(log_dir, host.name, "*")


def _stat_many(transport: Transport, paths: list[str]) -> dict[str, FileStat | None]:
    """One round trip for all of a host's files where the transport can; per-file stats otherwise."""
    batched = getattr(transport, "stat_many", None)
    return dict(batched(paths)) if batched is not None and paths else {}
