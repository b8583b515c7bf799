"""Event time for the simulator: log timestamps are when things happen in the simulated run.

The engine runs `speed` simulated seconds per wall second. Stamps follow one of two clocks:
- `wall` (what `kvwatch demo` uses): a line is stamped with the wall-clock instant it is written, so
  the server log, the client's files, nvidia-smi and /metrics all tell time by the same clock; at a
  speed above 1 the server simply works `speed` times faster (its tok/s stay per simulated second).
- `sim` (the default for the standalone simulator): the stamp is simulated time from the start, so
  a run at speed 60 logs an hour in a minute. `backfill_s` starts that clock in the past and `warp`
  runs it faster until it has caught up with now (kept for offline log generation; the demo no
  longer back-dates).
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
    wall_stamps: bool = False

    @property
    def epoch_start(self) -> float:
        """Epoch seconds of simulated time 0 (the first log line)."""
        return self.wall_start if self.wall_stamps else self.wall_start - self.backfill_s

    def sim_now(self) -> float:
        """Simulated seconds since time 0 that the wall clock has reached."""
        wall = time.monotonic() - self.mono_start
        if self.wall_stamps or self.backfill_s <= 0:
            return self.speed * wall
        fast = max(self.warp, 1.0) * self.speed * wall
        return min(fast, self.backfill_s + self.speed * wall)

    def wall_delay(self, sim_seconds: float) -> float:
        """Roughly how long the wall clock takes to cover `sim_seconds` right now."""
        warping = not self.wall_stamps and self.sim_now() < self.backfill_s * 1.0001
        rate = self.speed * (max(self.warp, 1.0) if warping else 1.0)
        return sim_seconds / max(rate, 1e-9)

    def epoch(self, sim_t: float) -> float:
        """Epoch seconds stamped on a line of simulated time `sim_t`."""
        if self.wall_stamps:
            return self.wall_start + sim_t / max(self.speed, 1e-9)
        return self.epoch_start + sim_t
