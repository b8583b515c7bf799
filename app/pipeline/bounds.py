"""Bounded work per line and per host: what a hostile or broken log can make the pipeline do.

A log line is whatever the remote process printed. Without bounds one line of `k: v` pairs becomes
that many fields, each a series in the store, the page's metric list and /metrics, forever. So:
- a line over `max_line_bytes` (64 KiB; SGLang's longest real lines are a few hundred bytes) is not
  parsed. Output files are exempt: they are counted, never parsed, and a completion can be long;
- a record keeps its first `max_fields` (64) fields; `kind`, `line`, `ts` and `tags` always stay;
- a host has at most `max_series` (1024) distinct (metric, rank) series, counted from the start of
  the collecting process; samples of further new series are dropped, while known ones keep flowing.
What was dropped is counted per host and shown in /api/hosts as `dropped`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from operator import attrgetter
from typing import Any

from kvwatch.app.store.base import Sample
from kvwatch.collectors.base import Line

MAX_LINE_BYTES = 64 * 1024
MAX_FIELDS = 64
MAX_SERIES = 1024
KEPT_FIELDS = ("kind", "line", "ts", "tags")


@dataclass
class Dropped:
    long_lines: int = 0  # lines not parsed: over max_line_bytes
    fields: int = 0  # fields cut from records over max_fields
    samples: int = 0  # samples of new series once the host has max_series


@dataclass(frozen=True, slots=True)
class Limits:
    max_line_bytes: int = MAX_LINE_BYTES
    max_fields: int = MAX_FIELDS
    max_series: int = MAX_SERIES


class HostBounds:
    """One host's limits and counts. Called from the host's thread; read by the API's."""

    def __init__(self, limits: Limits | None = None, known_series: set[tuple[str, str]] | None = None) -> None:
        self.limits = limits or Limits()
        self.dropped = Dropped()
        self._series = set(known_series or ())
        self._lock = threading.Lock()
        # Told how many samples of new series were refused: the cap is an alert, never silence.
        self.on_refused: Callable[[int], None] | None = None

    def lines(self, lines: list[Line]) -> list[Line]:
        """The lines short enough to parse."""
        limit = self.limits.max_line_bytes
        # len(text) <= limit / 4 is always short enough (UTF-8 is at most 4 bytes a character).
        if not lines or max(map(len, map(attrgetter("text"), lines))) <= limit // 4:
            return lines  # a backlog's usual case, checked without Python code per line
        kept = [line for line in lines if len(line.text) <= limit // 4 or len(line.text.encode()) <= limit]
        if len(kept) != len(lines):
            with self._lock:
                self.dropped.long_lines += len(lines) - len(kept)
        return kept

    def record(self, record: dict[str, Any]) -> dict[str, Any]:
        """The record with at most max_fields fields besides the ones every record needs."""
        extra = [key for key in record if key not in KEPT_FIELDS]
        if len(extra) <= self.limits.max_fields:
            return record
        keep = set(extra[: self.limits.max_fields]) | set(KEPT_FIELDS)
        with self._lock:
            self.dropped.fields += len(extra) - self.limits.max_fields
        return {key: value for key, value in record.items() if key in keep}

    def samples(self, samples: list[Sample]) -> list[Sample]:
        """The samples whose series is known or still fits under max_series."""
        kept = []
        with self._lock:
            for sample in samples:
                series = (sample.metric, sample.rank)
                if series not in self._series:
                    if len(self._series) >= self.limits.max_series:
                        self.dropped.samples += 1
                        continue
                    self._series.add(series)
                kept.append(sample)
        self._refused(len(samples) - len(kept))
        return kept

    def knows(self, series: tuple[str, str]) -> bool:
        return series in self._series

    def reserve(self, series: list[tuple[str, str]]) -> None:
        """Admit these series now if they fit, storing nothing yet: a host value combined later keeps
        the place its first part had, ahead of the parts' series that come after."""
        with self._lock:
            for one in series:
                if one not in self._series and len(self._series) < self.limits.max_series:
                    self._series.add(one)

    def count_dropped(self, samples: int) -> None:
        """Samples of a series refused by max_series, counted where a bulk batch refuses them at once."""
        with self._lock:
            self.dropped.samples += samples
        self._refused(samples)

    def _refused(self, samples: int) -> None:
        if samples and self.on_refused is not None:
            self.on_refused(samples)

    def as_dict(self) -> dict[str, int]:
        with self._lock:
            return asdict(self.dropped)
