"""Writes simulated SGLang log lines with the version's prefix and event-time timestamps."""

from __future__ import annotations

import sys
import threading
import time
from datetime import datetime
from typing import TextIO

from kvwatch.simulator import logfmt
from kvwatch.simulator.clock import SimClock


class LogWriter:
    """One log stream (a file or stdout); safe to call from the engine and HTTP threads."""

    def __init__(self, stream: TextIO, fmt: logfmt.VersionFormat, clock: SimClock, tp_size: int = 1,
                 pace: bool = True, dp_size: int = 1) -> None:
        self.stream = stream
        self.fmt = fmt
        self.clock = clock
        self.tp_size = tp_size
        self.dp_size = dp_size
        self.pace = pace
        self._lock = threading.Lock()

    def stamp(self, sim_t: float) -> str:
        """The bracketed time; waits first (when pacing) so no line is written before it happens."""
        if self.pace:
            ahead = sim_t - self.clock.sim_now()
            if ahead > 0:
                time.sleep(min(self.clock.wall_delay(ahead), 5.0))
        return datetime.fromtimestamp(self.clock.epoch(sim_t)).strftime(self.fmt.datefmt)

    def write_raw(self, text: str) -> None:
        with self._lock:
            self.stream.write(text if text.endswith("\n") else text + "\n")
            self.stream.flush()

    def untagged(self, sim_t: float, message: str) -> None:
        """Lines of the HTTP server / tokenizer manager: `[time] message`."""
        self.write_raw(f"[{self.stamp(sim_t)}] {message}")

    def rank(self, sim_t: float, message: str, tp_rank: int = 0, dp_rank: int | None = None) -> None:
        """A scheduler's line; with --dp-size > 1 and no dp_rank given, every DP rank's scheduler logs it."""
        stamp = self.stamp(sim_t)
        ranks: list[int | None] = [dp_rank] if dp_rank is not None or self.dp_size == 1 else list(
            range(self.dp_size))
        for rank in ranks:
            self.write_raw(f"[{stamp}{logfmt.rank_tag(self.fmt, tp_rank, self.tp_size, rank)}] {message}")

    def all_ranks(self, sim_t: float, message: str, dp_rank: int | None = None) -> None:
        """Lines every TP rank logs (retractions, host-pool allocation, old capacity lines)."""
        for tp_rank in range(self.tp_size):
            self.rank(sim_t, message, tp_rank, dp_rank)

    def uvicorn(self, sim_t: float, message: str) -> None:
        self.write_raw(logfmt.uvicorn_prefix(self.fmt, self.stamp(sim_t)) + message)

    def close(self) -> None:
        with self._lock:
            if self.stream not in (sys.stdout, sys.stderr):
                self.stream.close()
