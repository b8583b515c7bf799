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
Small disorder is neither: lines behind the watermark by up to STEP_S are stored as logged and
counted as `late` (by DP ranks interleaving), since they cannot move any clock forward.

The host's clock itself may step (an NTP correction, a VM resumed): its lines then arrive from the
"future", or more than STEP_S behind the watermark, all at once. So samples from the future, and samples
more than STEP_S behind, are first held (`held`, at most MAX_HELD a host) and the guard says it is
`suspect`: the host loop reads the host's clock again at once, and `release` re-examines what was held
with the skew then measured. Only what is still an outlier after that is dropped; a step of the clock
loses nothing and stores nothing early.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

from kvwatch.app.store.base import EventRow, Sample

log = logging.getLogger(__name__)

FUTURE_S = 300.0
PAST_S = 3600.0
STEP_S = 300.0  # behind the watermark by more than this: a step of the host's clock, until it is read again
MAX_HELD = 100_000
LATE_S = 1.0  # disorder below this (one second's stamps from several ranks) is not counted
FLOOR = dt.datetime(2001, 1, 1, tzinfo=dt.UTC).timestamp()


@dataclass
class StampCounts:
    future: int = 0  # records quarantined: stamped ahead of the host's clock and the watermark
    past: int = 0  # records quarantined: stamped far behind both, or before 2001
    late: int = 0  # records stored: behind the watermark by more than LATE_S, up to STEP_S
    held: int = 0  # records held until the host's clock is read again (then stored or quarantined)
    recovered: int = 0  # held records stored after the clock was read again


class StampGuard:
    """One host's watermarks (per source and path) and outlier counts. The host thread checks;
    the API's threads read `as_dict`."""

    def __init__(self, future_s: float = FUTURE_S, past_s: float = PAST_S) -> None:
        self.future_s, self.past_s = future_s, past_s
        self.counts = StampCounts()
        self.last: dict[str, Any] | None = None
        self._marks: dict[tuple[str, str], float] = {}
        self._held: dict[tuple[str, str], list[Held]] = {}
        self._lock = threading.Lock()

    @property
    def suspect(self) -> bool:
        """Samples wait for the host's clock to be read again."""
        return bool(self._held)

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
        if t < mark - STEP_S:
            return "behind"
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
            key = (source, path)
            reason = self.verdict(key, t, time.time() if now is None else now)
            if reason is None:
                return samples, events
            if reason == "late":
                self.counts.late += 1
                return samples, events
            if reason in ("future", "behind") and samples and self._hold(key, line, samples):
                return [], events  # an event is kept as it is: it waits for nobody
            if reason == "behind":  # nothing held (events only, or the hold is full): stored as logged
                self.counts.late += 1
                return samples, events
            setattr(self.counts, reason, getattr(self.counts, reason) + 1)
            count = self.counts.future + self.counts.past
            self.last = {"source": source, "path": path, "line": line, "t": _iso(t), "reason": reason,
                         "watermark": _iso(self._marks.get((source, path)))}
        if math.log10(count).is_integer():  # the first, the 10th, the 100th, ...
            log.warning("%s line %d: stamp %s is %s the host's clock and watermark; quarantined (%d so far)",
                        path or source, line, _iso(t), "ahead of" if reason == "future" else "far behind", count)
        retimed = [e._replace(t=read_at, data={**e.data, "ts_outlier": reason}) for e in events]
        return [], retimed

    def _hold(self, key: tuple[str, str], line: int, samples: list[Sample]) -> bool:
        if self.counts.held - self.counts.recovered >= MAX_HELD:
            return False
        self._held.setdefault(key, []).append(Held(line, samples))
        self.counts.held += 1
        return True

    def release(self, key: tuple[str, str], shift_s: float, now: float | None = None) -> list[Sample]:
        """The samples held for `key`, moved by `shift_s` (the change of the skew correction, as the
        host's clock read again says) and checked again: those now in time, in line order. What is
        still an outlier is quarantined for good (counted as before)."""
        with self._lock:
            held = self._held.pop(key, [])
            now = time.time() if now is None else now
            kept: list[Sample] = []
            for item in held:
                moved = [s._replace(t=s.t + shift_s) for s in item.samples]
                reason = self.verdict(key, moved[0].t, now)
                if reason in (None, "late", "behind"):
                    kept.extend(moved)
                    self.counts.recovered += 1
                    continue
                setattr(self.counts, reason, getattr(self.counts, reason) + 1)
                self.last = {"source": key[0], "path": key[1], "line": item.line, "t": _iso(moved[0].t),
                             "reason": reason, "watermark": _iso(self._marks.get(key))}
            return kept

    def held_keys(self) -> list[tuple[str, str]]:
        with self._lock:
            return list(self._held)

    def as_dict(self) -> dict[str, Any]:
        with self._lock:
            return {**asdict(self.counts), "last": self.last}


class Held(NamedTuple):
    """One record's samples waiting for the host's clock."""

    line: int
    samples: list[Sample]


def _iso(t: float | None) -> str | None:
    if t is None:
        return None
    try:
        return dt.datetime.fromtimestamp(t, dt.UTC).replace(tzinfo=None).isoformat()
    except (OverflowError, OSError, ValueError):
        return repr(t)
