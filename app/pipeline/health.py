"""Per-host and per-source health, as data the API and the page show."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

HostState = Literal["connecting", "up", "reconnecting", "failed", "stopped"]


@dataclass(slots=True)
class SourceHealth:
    path: str
    bytes: int = 0
    lines: int = 0
    records: int = 0
    unparsed: int = 0
    last_line_at: float | None = None

    def saw(self, lines: int, nbytes: int, records: int, unparsed: int) -> None:
        self.lines += lines
        self.bytes += nbytes
        self.records += records
        self.unparsed += unparsed
        if lines:
            self.last_line_at = time.time()


@dataclass(slots=True)
class HostHealth:
    state: HostState = "connecting"
    last_error: str | None = None
    reconnects: int = 0
    since: float = field(default_factory=time.time)
    sources: dict[str, SourceHealth] = field(default_factory=dict)

    def set_state(self, state: HostState, error: str | None = None) -> None:
        if state != self.state:
            self.state, self.since = state, time.time()
        if error is not None:
            self.last_error = error

    def as_dict(self) -> dict[str, Any]:
        now = time.time()
        sources = {}
        for key, source in self.sources.items():
            item = asdict(source)
            item["last_line_age_s"] = None if source.last_line_at is None else round(now - source.last_line_at, 1)
            sources[key] = item
        return {
            "state": self.state,
            "last_error": self.last_error,
            "reconnects": self.reconnects,
            "since": self.since,
            "sources": sources,
        }
