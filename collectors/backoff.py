"""When to try a host again: capped exponential backoff with full jitter, by kind of failure.

- network errors and timeouts: base 0.5 s doubling to a 30 s cap, jittered so 64 hosts that
  dropped together do not reconnect together; the count resets once a connection has stayed up
  for `stable_after` seconds;
- authentication refused: at least `auth_min` s between tries (no lockout, no fail2ban ban);
- host key unknown or changed: never retried automatically (None) — a person must look.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from kvwatch.collectors.base import AuthFailed, HostKeyRejected


@dataclass
class Backoff:
    base: float = 0.5
    cap: float = 30.0
    auth_min: float = 60.0
    stable_after: float = 300.0
    failures: int = 0

    def next_delay(self, exc: Exception) -> float | None:
        if isinstance(exc, HostKeyRejected):
            return None
        self.failures += 1
        delay = random.uniform(0, min(self.cap, self.base * 2 ** min(self.failures, 20)))
        if isinstance(exc, AuthFailed):
            return max(self.auth_min, delay)
        return delay

    def connected_for(self, seconds: float) -> None:
        if seconds >= self.stable_after:
            self.failures = 0
