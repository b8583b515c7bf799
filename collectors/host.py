"""One thread per host: connect, follow every file, sample GPUs and /metrics, deliver to a sink.

This is the loop `kvwatch serve`/`collect`/`demo` run (app/pipeline/collector.py builds it with a sink
that parses and stores); the collector tests give it a sink that keeps raw lines, so what they prove
about loss and duplicates holds for the app.

A host's failures stay in its own thread (a hung or unreachable host never delays another): errors
move it to `reconnecting` and it reconnects after a jittered delay (collectors/backoff.py); an
unknown or changed host key stops it for good (`failed`). Each round is one batched stat for all
files of the host, reads only where something changed, then a wait on the host's `tail -F` wake-up
stream.

The sink stores lines and the TailState after them in one transaction. If it raises, the tail
rewinds to the last delivered state and the same lines come again on the next round.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from kvwatch.collectors.backoff import Backoff
from kvwatch.collectors.base import AuthFailed, CollectorError, FileStat, Line, SourceUnreadable, Transport
from kvwatch.collectors.clock import ClockUnread, probe_host
from kvwatch.collectors.clock_infer import HostClock
from kvwatch.collectors.gpu import GpuSampler
from kvwatch.collectors.health import HOST_KEY_REJECTED, HostHealth, Quarantine, tail_counters
from kvwatch.collectors.host_clock import host_clock_dict, observe_files, refresh_report, reprobe_host
from kvwatch.collectors.lines import LineSplitter, TailState
from kvwatch.collectors.metrics import scrape
from kvwatch.collectors.periodic import Periodic
from kvwatch.collectors.sinks import ClockSink, ClockStepSuspected, Delivered, Sink
from kvwatch.collectors.tail import UNKNOWN, Tail, Unknown
from kvwatch.collectors.watch import Watch

log = logging.getLogger(__name__)
KINDS = ("server_log", "client_log", "outputs")
SUSPECT_PROBE_S = 1.0  # the host's clock read again at most this often while lines wait for it


@dataclass(frozen=True, slots=True)
class SourceSpec:
    kind: str  # one of KINDS
    pattern: str  # a path, or a glob when `glob` (output files always are one)
    glob: bool = False  # re-expanded every `glob_interval`: new dataset folders, a restart's new log

    @property
    def expands(self) -> bool:
        return self.glob or self.kind == "outputs"


@dataclass(frozen=True, slots=True)
class HostOptions:
    poll_interval: float = 1.0  # fallback when no wake-up arrives
    glob_interval: float = 10.0
    gpu: bool = False
    metrics_port: int | None = None
    metrics_interval: float = 5.0
    gpu_interval: float = 1.0  # GPU samples are handed to the sink this often (one transaction each)
    gpu_sample_s: float = 1.0  # nvidia-smi's own loop interval (-lms): how often the GPUs are sampled
    wake: bool = True  # a `tail -F` wake-up stream; False = poll every poll_interval only
    clock_interval: float = 600.0  # the host's clock is read again this often (skew drift, zone change)


class HostFollower:
    def __init__(self, name: str, connect: Callable[[], Transport], sources: list[SourceSpec], sink: Sink,
                 options: HostOptions | None = None, backoff: Backoff | None = None,
                 on_health: Callable[[HostHealth], None] | None = None) -> None:
        self.name = name
        self.connect = connect
        self.sources = sources
        self.sink = sink
        self.options = options or HostOptions()
        self.backoff = backoff or Backoff()
        self.health = HostHealth()
        self.on_health = on_health or (lambda health: None)
        self.tails: dict[tuple[str, str], Tail] = {}
        self._fixed: set[tuple[str, str]] = set()  # configured paths (no glob): shown missing while they are
        self.clock: HostClock | None = None  # the host's zone and skew, read on every connect
        self._delivered: dict[tuple[str, str], TailState | None] = {}
        self._unreadable = Quarantine(self.options.glob_interval)
        self._retry_in = 0.0  # the backoff's delay after the last connection failed: the loop's interval
        self._loop = Periodic(f"kvwatch-host-{name}", self._connection, lambda: self._retry_in)

    def start(self) -> HostFollower:
        self._loop.start()
        return self

    def is_alive(self) -> bool:
        return self._loop.running

    def request_stop(self) -> None:
        """Ask the loop to end (after its current wait, at most a poll interval), without waiting for it."""
        self._loop.request_stop()

    def stop(self, timeout: float = 10.0) -> None:
        self._loop.stop(timeout)
        self.health.set_state("stopped")

    # -- connection life ----------------------------------------------------------------------
    def _connection(self) -> None:
        """One tick of the loop: connect and follow until the connection fails, then set the delay
        before the next try (or stop the loop for a rejected host key)."""
        try:
            transport = self.connect()
        except CollectorError as exc:
            self._back_off(exc)
            return
        except Exception as exc:  # a bug in connecting: the same backoff, never a tight loop
            log.exception("%s: connecting failed unexpectedly", self.name)
            self._back_off(exc)
            return
        up_at = time.monotonic()
        self.health.set_state("up")
        self.health.next_retry_in = None
        self.on_health(self.health)
        try:
            self._follow(transport)
        except CollectorError as exc:
            self.backoff.connected_for(time.monotonic() - up_at)
            self._back_off(exc)
        except Exception as exc:  # a bug must not end collection for days: log it, reconnect
            log.exception("%s: collection failed unexpectedly", self.name)
            self._back_off(exc)
        finally:
            transport.close()

    def _back_off(self, exc: Exception) -> None:
        delay = self.backoff.next_delay(exc)
        if delay is None:
            # A changed or unknown key is a security event: a person must look, we never retry.
            self.health.set_state("failed", f"{HOST_KEY_REJECTED}: {exc}")
            self.on_health(self.health)
            log.error("%s: %s: %s (not retried: check the host key)", self.name, HOST_KEY_REJECTED, exc)
            self._loop.stop()
            return
        kind = "authentication refused: " if isinstance(exc, AuthFailed) else ""
        self.health.set_state("reconnecting", f"{kind}{exc}")
        self.health.reconnects += 1
        self.health.next_retry_in = delay
        self.on_health(self.health)
        log.warning("%s: %s%s; retrying in %.1f s", self.name, kind, exc, delay)
        self._retry_in = delay

    def _clock_step_suspected(self, next_clock: float) -> bool:
        """The sink holds lines stamped as if the host's clock had stepped: read the clock now, at most
        every SUSPECT_PROBE_S (a writer whose own clock is off would otherwise probe every poll)."""
        if not isinstance(self.sink, ClockSink) or not self.sink.clock_suspect():
            return False
        return time.monotonic() >= next_clock - self.options.clock_interval + SUSPECT_PROBE_S

    # -- following ----------------------------------------------------------------------------
    def _follow(self, transport: Transport) -> None:
        for tail in self.tails.values():  # a new connection: every tail continues on it
            tail.rebind(transport)
        # every connect: the host's zone and skew, then each file's backlog (a reconnect is a catch-up)
        probe = probe_host(transport)
        self.clock = None if isinstance(probe, ClockUnread) else probe
        self.health.clock = host_clock_dict(self.clock, probe if isinstance(probe, ClockUnread) else None)
        self._discover(transport)
        self._observe(transport, list(self.tails))
        watch = self._watch(transport)
        gpu = GpuSampler(transport, interval_ms=round(1000 * self.options.gpu_sample_s)) if self.options.gpu else None
        next_glob = time.monotonic() + self.options.glob_interval
        next_clock = time.monotonic() + self.options.clock_interval
        next_metrics = next_gpu = 0.0
        try:
            while not self._loop.stopping:
                self._poll_files(transport)
                if gpu is not None and time.monotonic() >= next_gpu:
                    next_gpu = time.monotonic() + self.options.gpu_interval
                    self._deliver_live("gpu", "nvidia-smi", gpu.read(0.0))
                if self.options.metrics_port and time.monotonic() >= next_metrics:
                    next_metrics = time.monotonic() + self.options.metrics_interval
                    self._scrape(transport, self.options.metrics_port)
                if time.monotonic() >= next_clock or self._clock_step_suspected(next_clock):
                    next_clock = time.monotonic() + self.options.clock_interval
                    self.clock = reprobe_host(transport, self.sink, self.health, self.clock, self.tails)
                if time.monotonic() >= next_glob:
                    next_glob = time.monotonic() + self.options.glob_interval
                    watch = self._rediscover(transport, watch)
                if not watch.wait(self.options.poll_interval) and not watch.active:
                    self._loop.wait(self.options.poll_interval)
        finally:
            watch.close()
            if gpu is not None:
                gpu.close()

    def _rediscover(self, transport: Transport, watch: Watch) -> Watch:
        """Expand the globs again; new files are clocked and the wake-up stream covers them."""
        known = set(self.tails)
        if not self._discover(transport):
            return watch
        self._observe(transport, [key for key in self.tails if key not in known])
        watch.close()
        return self._watch(transport)

    def _observe(self, transport: Transport, keys: list[tuple[str, str]]) -> None:
        observe_files(transport, self.sink, self.health, self.clock, self.tails, keys)

    def _watch(self, transport: Transport) -> Watch:
        return Watch(transport, sorted(path for _, path in self.tails) if self.options.wake else [])

    def _discover(self, transport: Transport) -> bool:
        """Add tails for paths not followed yet (new output folders) and drop those no glob matches any
        more (their offsets stay stored); True if the set changed."""
        expanded = [(spec, transport.glob(spec.pattern) if spec.expands else [spec.pattern]) for spec in self.sources]
        self._fixed = {(spec.kind, spec.pattern) for spec in self.sources if not spec.expands}
        matched = {(spec.kind, path) for spec, paths in expanded for path in paths}
        gone = [key for key in self.tails if key not in matched]
        for key in gone:
            del self.tails[key]
            self._delivered.pop(key, None)
            self._unreadable.release(key)
        added = False
        for spec, paths in expanded:
            for path in paths:
                if (spec.kind, path) in self.tails:
                    continue
                state = self.sink.load_state(self.name, spec.kind, path)
                self.tails[(spec.kind, path)] = Tail(transport, path, spec.kind, state)
                self._delivered[(spec.kind, path)] = state
                self.health.source(spec.kind, path)
                added = True
        return added or bool(gone)

    def _poll_files(self, transport: Transport) -> None:
        keys = list(self.tails)
        stats = transport.stat_many([p for _, p in keys]) if keys else {}
        for key in keys:
            if self._unreadable.held(key):
                continue
            tail = self.tails[key]
            known: FileStat | Unknown | None = stats.get(key[1], UNKNOWN)
            # Again only while the tail is behind (a long file takes several reads): another poll
            # after it caught up would be one more stat round trip per file and wake-up, for nothing.
            while self._poll_one(key, tail, known) and tail.behind:
                known = UNKNOWN  # the batched stat was for the first read

    def _poll_one(self, key: tuple[str, str], tail: Tail, known: FileStat | Unknown | None) -> bool:
        counters = tail_counters(tail.stats)
        bytes_before = tail.stats.bytes_read
        try:
            lines = tail.poll(known)
        except SourceUnreadable as exc:  # this file's problem: the others keep flowing
            self._unreadable.hold(key)
            self.health.source(key[0], key[1]).error = str(exc)
            log.warning("%s: %s (skipped for %.0f s)", self.name, exc, self._unreadable.hold_s)
            return False
        if self._unreadable.recovered(key):
            self.health.source(key[0], key[1]).error = None
        if key in self._fixed and self.health.source(key[0], key[1]).set_missing(tail.missing):
            log.warning("%s: %s %s", self.name, key[1], "is missing" if tail.missing else "is back")
        if not lines and tail.state == self._delivered.get(key):
            self.sink.idle(self.name, key[0], key[1])
            return False
        try:
            delivered = self.sink.deliver(self.name, key[0], key[1], lines, tail.state)
        except ClockStepSuspected as exc:  # the same lines again once the host's clock has been read
            tail.rewind(self._delivered.get(key))
            log.info("%s: %s", self.name, exc)
            return False
        except Exception as exc:  # the store refused: rewind, same lines again next round
            tail.rewind(self._delivered.get(key))
            self.health.last_error = f"store: {exc}"
            log.error("%s: storing %s failed: %s", self.name, key[1], exc)
            self._loop.wait(self.options.poll_interval)
            return False
        self._delivered[key] = tail.state
        self.health.recovered("store: ")
        refresh_report(self.sink, self.health, key[0], key[1])
        health = self.health.source(key[0], key[1])
        got = delivered or Delivered(0, 0)
        health.saw(len(lines), tail.stats.bytes_read - bytes_before, got.records, got.unparsed, got.unknown_keys)
        if tail.state is not None:
            health.progress(tail.state.offset, tail.size_seen)
        health.add_counts({k: v - counters[k] for k, v in tail_counters(tail.stats).items()})
        return True

    def _deliver_live(self, kind: str, path: str, lines: list[Line]) -> None:
        """GPU samples and /metrics scrapes: nothing to resume, so a refused batch is only logged."""
        if not lines:
            return
        try:
            delivered = self.sink.deliver(self.name, kind, path, lines, None)
        except ClockStepSuspected as exc:  # this read's samples go; the next ones come after the clock read
            log.info("%s: %s", self.name, exc)
            return
        except Exception as exc:
            self.health.last_error = f"store: {exc}"
            log.error("%s: storing %s failed: %s", self.name, kind, exc)
            return
        self.health.recovered("store: ")
        got = delivered or Delivered(0, 0)
        self.health.source(kind, path).saw(len(lines), sum(len(ln.text) + 1 for ln in lines), got.records, got.unparsed)

    def _scrape(self, transport: Transport, port: int) -> None:
        path = f"127.0.0.1:{port}/metrics"
        try:
            text = scrape(transport, port)
        except CollectorError as exc:  # the server may be restarting or run without --enable-metrics
            self.health.source("metrics", path).unparsed += 1
            self.health.last_error = f"/metrics: {exc}"
            return
        # generation = scrape time (ms), offset = end of the line in that scrape: unique keys
        split = LineSplitter("metrics", int(time.time() * 1000), 0, 0)
        self._deliver_live("metrics", path, split.feed(text.encode() if text.endswith("\n") else text.encode() + b"\n"))

