"""Event time for the simulator: log timestamps are when things happen in the simulated run.

A demo must show minutes of a run within its first minute, so the clock can start in the past
(`backfill_s` seconds of history) and run `warp` times faster than the wall clock until it has caught
up with now; from then on it runs at `speed` (1.0 = real time). With backfill 0 and warp 1 it is
simply `speed` times the wall clock from now.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass(slots=True)
class SimClock:
    speed: float = 1.0
    backfill_s: float = 0.0
    warp: float = 1.0
    wall_start: float = field(default_factory=time.time)
    mono_start: float = field(default_factory=time.monotonic)

    @property
    def epoch_start(self) -> float:
        """Epoch seconds of simulated time 0 (the first log line)."""
        return self.wall_start - self.backfill_s

    def sim_now(self) -> float:
        """Simulated seconds since time 0 that the wall clock has reached."""
        wall = time.monotonic() - self.mono_start
        fast = max(self.warp, 1.0) * self.speed * wall
        return min(fast, self.backfill_s + self.speed * wall) if self.backfill_s > 0 else self.speed * wall

    def wall_delay(self, sim_seconds: float) -> float:
        """Roughly how long the wall clock takes to cover `sim_seconds` right now."""
        rate = self.speed * (max(self.warp, 1.0) if self.sim_now() < self.backfill_s * 1.0001 else 1.0)
        return sim_seconds / max(rate, 1e-9)

    def epoch(self, sim_t: float) -> float:
        return self.epoch_start + sim_t
