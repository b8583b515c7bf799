"""GPU samples: nvidia-smi's own query loop on one channel per host (no process start per sample).

The CSV lines come out as Lines (source "gpu"); parsers/ turns them into `kind: "gpu"` records.
GPU samples are live readings with nothing to resume (no TailState). So that a store keyed like
file lines (source, generation, offset) never merges two runs of the loop, `generation` is the
loop's start time in epoch milliseconds and `offset` the byte count within that run.
"""

from __future__ import annotations

import time

from kvwatch.collectors.base import CollectorError, Line, Stream, Transport
from kvwatch.collectors.lines import LineSplitter

QUERY = "timestamp,index,utilization.gpu,memory.used,memory.total,power.draw,temperature.gpu"


def nvidia_smi_argv(interval_ms: int = 1000) -> list[str]:
    return ["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits", "-lms", str(interval_ms)]


class GpuSampler:
    """Keeps the loop running; `read()` returns the complete lines that arrived, never blocks long.

    A loop that ends is started again after `restart_after` seconds, unless it had run at least that
    long: then at the next interval, so one exit of a loop that worked for hours (a driver hiccup,
    a killed process) leaves a gap of a sample or two, not of `restart_after`, and a loop that keeps
    failing is still started at most once per `restart_after`.
    """

    def __init__(self, transport: Transport, source: str = "gpu", interval_ms: int = 1000,
                 restart_after: float = 30.0) -> None:
        self.transport = transport
        self.source = source
        self.interval_ms = interval_ms
        self.restart_after = restart_after
        self.generation = 0
        self.samples = 0
        self.last_error: str | None = None
        self._stream: Stream | None = None
        self._split: LineSplitter | None = None
        self._next_start = 0.0
        self._started_at = 0.0

    def read(self, timeout: float = 0.0) -> list[Line]:
        if self._stream is None and not self._start():
            return []
        assert self._stream is not None and self._split is not None
        lines: list[Line] = []
        wait = timeout
        while True:
            data = self._stream.read(wait)
            wait = 0.0
            if data is None:
                break
            if data == b"":
                self._ended()
                break
            lines += self._split.feed(data)
        self.samples += len(lines)
        return lines

    def _start(self) -> bool:
        if time.monotonic() < self._next_start:
            return False
        try:
            self._stream = self.transport.open_stream(nvidia_smi_argv(self.interval_ms))
        except CollectorError as exc:
            self.last_error = str(exc)
            self._next_start = time.monotonic() + self.restart_after
            return False
        self._started_at = time.monotonic()
        self.generation = max(self.generation + 1, int(time.time() * 1000))
        self._split = LineSplitter(self.source, self.generation, 0, 0)
        return True

    def _ended(self) -> None:
        """nvidia-smi exited (no GPU, no driver, not installed): retry later, say why."""
        err = b""
        if self._stream is not None:
            err = self._stream.stderr()
            self._stream.close()
        self.last_error = (err.decode(errors="replace").strip() or "nvidia-smi exited")[:300]
        self._stream = None
        now = time.monotonic()
        ran_long = now - self._started_at >= self.restart_after
        self._next_start = now + (self.interval_ms / 1000 if ran_long else self.restart_after)

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
