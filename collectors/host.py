"""One thread per host: connect, follow every file, sample GPUs and /metrics, deliver to a sink.

A host's failures stay in its own thread (a hung or unreachable host never delays another): errors
move it to `backoff` and it reconnects after a jittered delay (collectors/backoff.py); an unknown
or changed host key stops it for good. Each loop is one batched stat for all files of the host,
reads only where something changed, then a wait on the host's `tail -F` wake-up stream.

The sink stores lines and the TailState after them in one transaction. If it raises, the tail
rewinds to the last delivered state and the same lines come again on the next round.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from collectors.backoff import Backoff
from collectors.base import AuthFailed, CollectorError, Line, Transport
from collectors.gpu import GpuSampler
from collectors.health import HostHealth, SourceHealth
from collectors.lines import LineSplitter
from collectors.metrics import scrape
from collectors.tail import UNKNOWN, Tail
from collectors.tail_state import TailState
from collectors.watch import Watch

log = logging.getLogger(__name__)
KINDS = ("server_log", "client_log", "outputs")


@dataclass(frozen=True, slots=True)
class SourceSpec:
    kind: str  # one of KINDS
    pattern: str  # a path; for "outputs" a glob, re-expanded as new dataset folders appear


@dataclass(frozen=True, slots=True)
class HostOptions:
    poll_interval: float = 1.0  # fallback when no wake-up arrives
    glob_interval: float = 10.0
    gpu: bool = False
    metrics_port: int | None = None
    metrics_interval: float = 5.0
    wake: bool = True  # a `tail -F` wake-up stream; False = poll every poll_interval only


class Sink(Protocol):
    def load_state(self, host: str, kind: str, path: str) -> TailState | None: ...

    def deliver(self, host: str, kind: str, path: str, lines: list[Line], state: TailState | None) -> None:
        """Store `lines` and `state` atomically (state None: live samples, nothing to resume)."""


class HostFollower:
    def __init__(self, name: str, connect: Callable[[], Transport], sources: list[SourceSpec], sink: Sink,
                 options: HostOptions | None = None, backoff: Backoff | None = None) -> None:
        self.name = name
        self.connect = connect
        self.sources = sources
        self.sink = sink
        self.options = options or HostOptions()
        self.backoff = backoff or Backoff()
        self.health = HostHealth(name)
        self.tails: dict[tuple[str, str], Tail] = {}
        self._delivered: dict[tuple[str, str], TailState | None] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"kvwatch-host-{name}", daemon=True)

    def start(self) -> HostFollower:
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._thread.join(timeout)
        self.health.set_state("stopped")

    # -- connection life ----------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.is_set():
            self.health.set_state("connecting")
            try:
                transport = self.connect()
            except CollectorError as exc:
                if not self._back_off(exc):
                    return
                continue
            up_at = time.monotonic()
            self.health.set_state("up")
            self.health.next_retry_in = None
            try:
                self._follow(transport)
            except CollectorError as exc:
                self.backoff.connected_for(time.monotonic() - up_at)
                if not self._back_off(exc):
                    return
            finally:
                transport.close()

    def _back_off(self, exc: CollectorError) -> bool:
        delay = self.backoff.next_delay(exc)
        if delay is None:
            self.health.set_state("host_key_rejected", str(exc))
            log.error("%s: %s (not retried: check the host key)", self.name, exc)
            return False
        self.health.set_state("auth_failed" if isinstance(exc, AuthFailed) else "backoff", str(exc))
        self.health.reconnects += 1
        self.health.next_retry_in = delay
        log.warning("%s: %s; retrying in %.1f s", self.name, exc, delay)
        return not self._stop.wait(delay)

    # -- following ----------------------------------------------------------------------------
    def _follow(self, transport: Transport) -> None:
        for tail in self.tails.values():
            tail.rebind(transport)
        self._discover(transport)
        watch = self._watch(transport)
        gpu = GpuSampler(transport) if self.options.gpu else None
        next_glob = time.monotonic() + self.options.glob_interval
        next_metrics = 0.0
        try:
            while not self._stop.is_set():
                self._poll_files(transport)
                if gpu is not None:
                    self._deliver_gpu(gpu)
                if self.options.metrics_port and time.monotonic() >= next_metrics:
                    next_metrics = time.monotonic() + self.options.metrics_interval
                    self._scrape(transport)
                if time.monotonic() >= next_glob:
                    next_glob = time.monotonic() + self.options.glob_interval
                    if self._discover(transport):
                        watch.close()
                        watch = self._watch(transport)
                if not watch.wait(self.options.poll_interval) and not watch.active:
                    self._stop.wait(self.options.poll_interval)
        finally:
            watch.close()
            if gpu is not None:
                gpu.close()

    def _watch(self, transport: Transport) -> Watch:
        return Watch(transport, [path for _, path in self.tails] if self.options.wake else [])

    def _discover(self, transport: Transport) -> bool:
        """Add tails for paths not followed yet (new output folders); True if any was added."""
        added = False
        for spec in self.sources:
            paths = transport.glob(spec.pattern) if spec.kind == "outputs" else [spec.pattern]
            for path in paths:
                if (spec.kind, path) in self.tails:
                    continue
                state = self.sink.load_state(self.name, spec.kind, path)
                self.tails[(spec.kind, path)] = Tail(transport, path, spec.kind, state)
                self._delivered[(spec.kind, path)] = state
                self.health.sources[f"{spec.kind}:{path}"] = SourceHealth(spec.kind, path)
                added = True
        return added

    def _poll_files(self, transport: Transport) -> None:
        keys = list(self.tails)
        batch = getattr(transport, "stat_many", None)
        stats = batch([p for _, p in keys]) if batch is not None else {}
        for key in keys:
            tail = self.tails[key]
            known = stats.get(key[1], UNKNOWN)
            while self._poll_one(key, tail, known) and tail.behind:
                known = UNKNOWN  # catching up: stat again for the next chunk

    def _poll_one(self, key: tuple[str, str], tail: Tail, known: object) -> bool:
        lines = tail.poll(known)  # type: ignore[arg-type]
        if not lines and tail.state == self._delivered.get(key):
            return False
        try:
            self.sink.deliver(self.name, key[0], key[1], lines, tail.state)
        except Exception as exc:  # the store refused: rewind, same lines again next round
            tail.rewind(self._delivered.get(key))
            self.health.last_error = f"store: {exc}"
            log.exception("%s: delivering %s failed", self.name, key[1])
            self._stop.wait(self.options.poll_interval)
            return False
        self._delivered[key] = tail.state
        self._account(key, tail, lines)
        return True

    def _account(self, key: tuple[str, str], tail: Tail, lines: list[Line]) -> None:
        health = self.health.sources[f"{key[0]}:{key[1]}"]
        stats = tail.stats
        health.bytes, health.lines = stats.bytes_read, stats.lines
        health.truncated_lines, health.replaced_lines = stats.truncated_lines, stats.replaced_lines
        health.rotations, health.truncations = stats.rotations, stats.truncations + stats.replacements
        health.copies_drained = stats.copies_drained
        if lines:
            health.last_line_at = time.time()

    def _deliver_gpu(self, gpu: GpuSampler) -> None:
        lines = gpu.read(0.0)
        if lines:
            self.sink.deliver(self.name, "gpu", "nvidia-smi", lines, None)
            self.health.gpu_samples += len(lines)

    def _scrape(self, transport: Transport) -> None:
        port = self.options.metrics_port
        assert port is not None
        try:
            text = scrape(transport, port)
        except CollectorError as exc:
            self.health.last_error = str(exc)  # the server may simply not run with --enable-metrics
            return
        # generation = scrape time (ms), offset = end of the line in that scrape: unique keys
        split = LineSplitter("metrics", int(time.time() * 1000), 0, 0)
        lines = split.feed(text.encode() if text.endswith("\n") else text.encode() + b"\n")
        self.sink.deliver(self.name, "metrics", f"127.0.0.1:{port}/metrics", lines, None)
        self.health.metrics_scrapes += 1
