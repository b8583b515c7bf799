"""Per-host and per-source health, as plain data the app reads (GET /api/hosts)."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

State = Literal["connecting", "up", "backoff", "auth_failed", "host_key_rejected", "stopped"]


@dataclass
class SourceHealth:
    kind: str
    path: str
    bytes: int = 0
    lines: int = 0
    truncated_lines: int = 0
    replaced_lines: int = 0
    rotations: int = 0
    truncations: int = 0
    copies_drained: int = 0  # truncations whose unread rest was recovered from the copy
    last_line_at: float | None = None

    def last_line_age(self, now: float | None = None) -> float | None:
        if self.last_line_at is None:
            return None
        return (now or time.time()) - self.last_line_at


@dataclass
class HostHealth:
    name: str
    state: State = "connecting"
    last_error: str | None = None
    reconnects: int = 0
    state_since: float = field(default_factory=time.time)
    next_retry_in: float | None = None
    gpu_samples: int = 0
    metrics_scrapes: int = 0
    sources: dict[str, SourceHealth] = field(default_factory=dict)

    def set_state(self, state: State, error: str | None = None) -> None:
        if state != self.state:
            self.state, self.state_since = state, time.time()
        if error is not None:
            self.last_error = error

    def client_log_stale(self, after: float = 120.0) -> bool:
        """The client log stopped growing while outputs still grow: usually stdout buffering of a
        client started without PYTHONUNBUFFERED=1 (or python -u)."""
        now = time.time()
        client = [s for s in self.sources.values() if s.kind == "client_log"]
        outputs = [s.last_line_age(now) for s in self.sources.values() if s.kind == "outputs"]
        if not client or not any(age is not None and age < after for age in outputs):
            return False
        age = client[0].last_line_age(now)
        return age is None or age > after

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        now = time.time()
        for key, source in self.sources.items():
            out["sources"][key]["last_line_age_s"] = source.last_line_age(now)
        out["client_log_stale"] = self.client_log_stale()
        return out
