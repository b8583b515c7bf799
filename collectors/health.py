"""Per-host and per-source health, as plain data the app reads (GET /api/hosts, alerts, the page), and
the sources set aside while they cannot be read (`Quarantine`).

A client log the collecting user may not read, an output glob that matched a directory or a symlink
loop: each is one file's problem, not the connection's. Such a source is skipped for `hold_s` (the
glob interval), its error shown in its health, and then tried again; the host stays `up` and its
server log keeps flowing. Errors that are the connection's (StreamClosed, ConnectFailed, ...) still
end the connection and reconnect.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

# connecting: first attempt; up: following; reconnecting: waiting out a backoff after an error
# (`last_error` says which); failed: never retried (a rejected host key); stopped: by us.
HostState = Literal["connecting", "up", "reconnecting", "failed", "stopped"]
HOST_KEY_REJECTED = "host key rejected"  # how `last_error` starts when the state is "failed" for that

Key = tuple[str, str]  # (kind, path)
TAIL_COUNTERS = ("truncated_lines", "replaced_lines", "rotations", "truncations", "replacements",
                 "copies_drained", "lost_generations")


def source_key(kind: str, path: str) -> str:
    """One health entry per source: output files by their dataset folder, the logs by kind (a
    controller restart moves the server to a new log file; it is still the server log)."""
    if kind == "outputs":
        return f"outputs:{os.path.basename(os.path.dirname(path))}"
    return kind


@dataclass(slots=True)
class SourceHealth:
    path: str
    kind: str = ""
    bytes: int = 0
    lines: int = 0
    records: int = 0
    unparsed: int = 0
    unknown_keys: int = 0  # `key: value` parts read as no field (parsers.values.field_key): never a series
    truncated_lines: int = 0  # longer than the line limit: text cut, offsets exact
    replaced_lines: int = 0  # invalid UTF-8 replaced
    rotations: int = 0
    truncations: int = 0
    replacements: int = 0
    copies_drained: int = 0  # truncations whose unread rest was recovered from the copy
    lost_generations: int = 0  # a rotated file vanished before it was read to its end
    last_line_at: float | None = None
    # the zone offset used for this source's naive stamps and how it was found (app/pipeline/stamps.py)
    clock: dict[str, Any] | None = None
    error: str | None = None  # why this file cannot be read now (permission, a directory, a loop)
    missing: bool = False  # a configured log's path is not there now (deleted, moved away, not created yet)
    missing_since: float | None = None

    def set_missing(self, missing: bool) -> bool:
        """Record whether the path is there; True when that changed."""
        if missing == self.missing:
            return False
        self.missing, self.missing_since = missing, (time.time() if missing else None)
        return True
    # Catch-up progress of the current file: bytes of it collected (stored) of its size at the last
    # read; while behind, the lines a second since the catch-up began and the seconds left at that pace.
    bytes_read: int = 0
    bytes_total: int = 0
    catching_up: bool = False
    lines_per_s: float | None = None
    eta_s: float | None = None
    _since: tuple[float, int, int] | None = None  # (time, offset, lines) when this catch-up began

    def saw(self, lines: int, nbytes: int, records: int, unparsed: int, unknown_keys: int = 0) -> None:
        self.lines += lines
        self.bytes += nbytes
        self.records += records
        self.unparsed += unparsed
        self.unknown_keys += unknown_keys
        if lines:
            self.last_line_at = time.time()

    def progress(self, offset: int, size: int, now: float | None = None) -> None:
        """Where the tail stands in its file after a delivery: (bytes collected, file size)."""
        now = time.time() if now is None else now
        self.bytes_read, self.bytes_total = offset, max(size, offset)
        behind = offset < size
        if behind and self._since is None:
            self._since = (now, offset, self.lines)
        if self._since is not None:
            t0, offset0, lines0 = self._since
            elapsed = max(now - t0, 1e-3)
            self.lines_per_s = round((self.lines - lines0) / elapsed, 1)
            pace = (offset - offset0) / elapsed
            self.eta_s = round((size - offset) / pace, 1) if behind and pace > 0 else (0.0 if not behind else None)
        if not behind:
            self._since = None
        self.catching_up = behind

    def add_counts(self, counts: dict[str, int]) -> None:
        for name, value in counts.items():
            setattr(self, name, getattr(self, name) + value)

    def last_line_age(self, now: float | None = None) -> float | None:
        if self.last_line_at is None:
            return None
        return (now or time.time()) - self.last_line_at


@dataclass(slots=True)
class HostHealth:
    state: HostState = "connecting"
    last_error: str | None = None
    reconnects: int = 0
    since: float = field(default_factory=time.time)
    next_retry_in: float | None = None
    sources: dict[str, SourceHealth] = field(default_factory=dict)
    clock: dict[str, Any] = field(default_factory=dict)  # utc_offset_s, timezone, clock_skew_s (host_clock.py)
    recovered_from: dict[str, Any] | None = None  # the error last cleared by a recovery, and when
    # Samples of new series the app refused once the host had its cap of distinct series
    # (app/pipeline/bounds.py, max_series): the `series_cap` alert reads it.
    series_refused: int = 0

    def set_state(self, state: HostState, error: str | None = None) -> None:
        if state != self.state:
            self.state, self.since = state, time.time()
        if error is not None:
            self.last_error = error
        elif state == "up":
            self.recovered("")

    def recovered(self, prefix: str) -> None:
        """What failed works again: `last_error` (when it starts with `prefix`) no longer says the host
        is in trouble; it is kept as `recovered_from` with the time of the recovery."""
        if self.last_error is not None and self.last_error.startswith(prefix):
            self.recovered_from = {"error": self.last_error, "at": time.time()}
            self.last_error = None

    @property
    def catching_up(self) -> bool:
        """Some source is reading a backlog (bytes that were there before it got to them)."""
        return any(s.catching_up for s in self.sources.values())

    def source(self, kind: str, path: str) -> SourceHealth:
        item = self.sources.setdefault(source_key(kind, path), SourceHealth(path=path, kind=kind))
        item.path = path  # the newest file of the source (a restart's new log)
        return item

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
        now = time.time()
        sources = {}
        for key, source in self.sources.items():
            item = {k: v for k, v in asdict(source).items() if not k.startswith("_")}
            age = source.last_line_age(now)
            item["last_line_age_s"] = None if age is None else round(age, 1)
            sources[key] = item
        return {
            "state": self.state,
            "last_error": self.last_error,
            "recovered_from": self.recovered_from,
            "reconnects": self.reconnects,
            "since": self.since,
            "next_retry_in": self.next_retry_in,
            "client_log_stale": self.client_log_stale(),
            "sources": sources,
            "utc_offset_s": self.clock.get("utc_offset_s"),
            "timezone": self.clock.get("timezone"),
            "clock_skew_s": self.clock.get("clock_skew_s"),
            "clock_skew_corrected": bool(self.clock.get("clock_skew_corrected")),
            "clock": self.clock.get("clock", "unknown"),  # "read", or "unknown" with clock_error saying why
            "clock_error": self.clock.get("clock_error"),
        }


def tail_counters(stats: object) -> dict[str, int]:
    """The TailStats counters a source's health shows, by name."""
    return {name: getattr(stats, name) for name in TAIL_COUNTERS}


class Quarantine:
    def __init__(self, hold_s: float) -> None:
        self.hold_s = hold_s
        self._until: dict[Key, float] = {}
        self._failed: set[Key] = set()

    def hold(self, key: Key) -> None:
        self._until[key] = time.monotonic() + self.hold_s
        self._failed.add(key)

    def recovered(self, key: Key) -> bool:
        """True once for a source that failed before and has now been read."""
        if key not in self._failed:
            return False
        self._failed.discard(key)
        return True

    def held(self, key: Key) -> bool:
        until = self._until.get(key)
        if until is None:
            return False
        if time.monotonic() >= until:
            del self._until[key]  # try it again
            return False
        return True

    def release(self, key: Key) -> None:
        self._until.pop(key, None)
        self._failed.discard(key)
