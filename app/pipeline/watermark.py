"""Event time with a watermark one outlier cannot move: stamps checked against the host's clock.

Every sample's time is its log stamp made a UTC instant on this machine's clock (app/pipeline/stamps.py
applies the host's zone and skew). Alerting's clock, /metrics' latest value, the charts' range and
retention all follow the newest stored time, so one line stamped in the future (a writer whose clock
jumped, a corrupted line, year 9999) would freeze them all on that line. Per followed source:

- the watermark is the newest stamp accepted so far; it only moves through accepted stamps;
- a stamp more than FUTURE_S ahead of the host's clock AND more than FUTURE_S ahead of the
  watermark is `future`: the clock says it has not happened yet, and the file's own pace did not
  lead there (a sped-up simulated log creeps ahead of the clock line by line, which is accepted);
- a stamp more than PAST_S behind the watermark AND the host's clock, or before FLOOR, is `past`;
  one behind the watermark but within PAST_S of the host's clock is live data, and moves it back.

An outlier's samples are quarantined: not stored, so nothing reads its time as "latest"; each is
counted in the host's `/api/hosts` `stamps` (with the last one: source, line, logged time, reason)
and logged (the first of a source, then every power of ten). An outlier's event (a crash line, say)
is kept, re-timed to when its line was read, with `ts_outlier` naming the reason.
Small disorder is neither: lines behind the watermark by up to PAST_S are stored as logged and
counted as `late` (by DP ranks interleaving, or a backlog), since they cannot move any clock forward.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

from kvwatch.app.store.base import EventRow, Sample

log = logging.getLogger(__name__)

FUTURE_S = 300.0
PAST_S = 3600.0
LATE_S = 1.0  # disorder below this (one second's stamps from several ranks) is not counted
FLOOR = dt.datetime(2001, 1, 1, tzinfo=dt.UTC).timestamp()


@dataclass
class StampCounts:
    future: int = 0  # records quarantined: stamped ahead of the host's clock and the watermark
    past: int = 0  # records quarantined: stamped far behind both, or before 2001
    late: int = 0  # records stored: behind the watermark by more than LATE_S, up to PAST_S


class StampGuard:
    """One host's watermarks (per source and path) and outlier counts. The host thread checks;
    the API's threads read `as_dict`."""

    def __init__(self, future_s: float = FUTURE_S, past_s: float = PAST_S) -> None:
        self.future_s, self.past_s = future_s, past_s
        self.counts = StampCounts()
        self.last: dict[str, Any] | None = None
        self._marks: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()

    def verdict(self, key: tuple[str, str], t: float, now: float) -> str | None:
        """`future`, `past`, `late` or None (in order); moves the watermark for accepted stamps."""
        mark = self._marks.get(key)
        if not math.isfinite(t) or t < FLOOR:
            return "past"
        if t > now + self.future_s and (mark is None or t > mark + self.future_s):
            return "future"
        if mark is not None and t < mark - self.past_s and t < now - self.past_s:
            return "past"
        if mark is None or t > mark:
            self._marks[key] = t
            return None
        if t < mark - self.past_s:  # live by the host's clock: the watermark had run ahead; re-anchor
            self._marks[key] = t
            return None
        return "late" if t < mark - LATE_S else None

    def watermark(self, source: str, path: str) -> float | None:
        return self._marks.get((source, path))

    def filter(self, source: str, path: str, line: int, samples: list[Sample], events: list[EventRow],
               read_at: float, now: float | None = None) -> tuple[list[Sample], list[EventRow]]:
        """One record's rows with its stamp checked (a record's rows share one time)."""
        times = {s.t for s in samples} | {e.t for e in events}
        if len(times) != 1:
            return samples, events
        t = times.pop()
        with self._lock:
            reason = self.verdict((source, path), t, time.time() if now is None else now)
            if reason is None:
                return samples, events
            setattr(self.counts, reason, getattr(self.counts, reason) + 1)
            if reason == "late":
                return samples, events
            count = self.counts.future + self.counts.past
            self.last = {"source": source, "path": path, "line": line, "t": _iso(t), "reason": reason,
                         "watermark": _iso(self._marks.get((source, path)))}
        if math.log10(count).is_integer():  # the first, the 10th, the 100th, ...
            log.warning("%s line %d: stamp %s is %s the host's clock and watermark; quarantined (%d so far)",
                        path or source, line, _iso(t), "ahead of" if reason == "future" else "far behind", count)
        retimed = [e._replace(t=read_at, data={**e.data, "ts_outlier": reason}) for e in events]
        return [], retimed

    def as_dict(self) -> dict[str, Any]:
        with self._lock:
            return {**asdict(self.counts), "last": self.last}


def _iso(t: float | None) -> str | None:
    if t is None:
        return None
    try:
        return dt.datetime.fromtimestamp(t, dt.UTC).replace(tzinfo=None).isoformat()
    except (OverflowError, OSError, ValueError):
        return repr(t)
