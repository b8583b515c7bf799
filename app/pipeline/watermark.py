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

The host's clock itself may step (an NTP correction, a VM resumed): its lines then arrive from the
"future", or more than STEP_S behind the watermark, all at once. So the first such record of a source
since its last in-time one raises ClockStepSuspected before anything of its delivery is stored: the
host loop rewinds the tail, reads the host's clock again at once and calls `clock_checked`, and the same
lines come again, placed with the skew then measured. Only a record still out of line after that read
is quarantined (or stored late), as before. Nothing waits in memory, so a kill -9 loses nothing either.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import math
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

from kvwatch.app.store.base import EventRow, Sample
from kvwatch.collectors.sinks import ClockStepSuspected

log = logging.getLogger(__name__)

FUTURE_S = 300.0
PAST_S = 3600.0
STEP_S = 300.0  # behind the watermark by more than this: perhaps a step of the host's clock
LATE_S = 1.0  # disorder below this (one second's stamps from several ranks) is not counted
FLOOR = dt.datetime(2001, 1, 1, tzinfo=dt.UTC).timestamp()


@dataclass
class StampCounts:
    future: int = 0  # records quarantined: stamped ahead of the host's clock and the watermark
    past: int = 0  # records quarantined: stamped far behind both, or before 2001
    late: int = 0  # records stored: behind the watermark by more than LATE_S, up to PAST_S
    clock_checks: int = 0  # times a record out of line had the host's clock read again first


class StampGuard:
    """One host's watermarks (per source and path) and outlier counts. The host thread checks;
    the API's threads read `as_dict`."""

    def __init__(self, future_s: float = FUTURE_S, past_s: float = PAST_S) -> None:
        self.future_s, self.past_s = future_s, past_s
        self.counts = StampCounts()
        self.last: dict[str, Any] | None = None
        self._marks: dict[tuple[str, str], float] = {}
        # source -> the line of the record out of line that waits for the clock to be read. Once read, the
        # source's records are taken as they come until one in time past that line (a delivery read
        # again holds the same lines, in time or not; a log that stays behind is checked once)
        self._pending: dict[tuple[str, str], int] = {}
        self._checked: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    @property
    def suspect(self) -> bool:
        """A source's lines wait for the host's clock to be read again."""
        return bool(self._pending)

    def snapshot(self) -> tuple[StampCounts, dict[tuple[str, str], float], dict[str, Any] | None]:
        """What a delivery may change: taken back with `restore` when it is not stored."""
        with self._lock:
            return dataclasses.replace(self.counts), dict(self._marks), self.last

    def restore(self, saved: tuple[StampCounts, dict[tuple[str, str], float], dict[str, Any] | None]) -> None:
        with self._lock:
            self.counts, self._marks, self.last = dataclasses.replace(saved[0]), dict(saved[1]), saved[2]

    def clock_checked(self) -> None:
        """The host's clock was read (or reading it failed): the waiting sources go on as they are."""
        with self._lock:
            for key, line in self._pending.items():
                self._checked[key] = max(line, self._checked.get(key, 0))
                self.counts.clock_checks += 1
            self._pending.clear()

    def verdict(self, key: tuple[str, str], t: float, now: float) -> str | None:
        """`future`, `past`, `late` or None (in order); moves the watermark for accepted stamps."""
        reason, mark = self._judge(self._marks.get(key), t, now)
        if mark is not None:
            self._marks[key] = mark
        return reason

    def _judge(self, mark: float | None, t: float, now: float) -> tuple[str | None, float | None]:
        """`verdict` without effects: the reason and the watermark after this stamp."""
        if not math.isfinite(t) or t < FLOOR:
            return "past", mark
        if t > now + self.future_s and (mark is None or t > mark + self.future_s):
            return "future", mark
        if mark is not None and t < mark - self.past_s and t < now - self.past_s:
            return "past", mark
        if mark is None or t > mark:
            return None, t
        if t < mark - self.past_s:  # live by the host's clock: the watermark had run ahead; re-anchor
            return None, t
        return ("late" if t < mark - LATE_S else None), mark

    def precheck(self, source: str, path: str, stamped: list[tuple[int, float]], now: float | None = None) -> None:
        """Raise ClockStepSuspected before a delivery changes anything when one of its records (line,
        time) is out of line and the host's clock has not been read since its source's last in-time
        record; the records are then judged by `filter` as they come."""
        now = time.time() if now is None else now
        key = (source, path)
        with self._lock:
            mark, checked = self._marks.get(key), self._checked.get(key)
            for line, t in stamped:
                reason, after = self._judge(mark, t, now)
                if reason is None and checked is not None and line > checked:
                    checked = None
                elif _stepped(reason, t, mark) and checked is None:
                    self._pending[key] = max(line, self._pending.get(key, 0))
                    raise ClockStepSuspected(f"{path or source} line {line}: stamp {_iso(t)} is out of line "
                                             f"with {_iso(mark)}; reading the host's clock again first")
                mark = after

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
            mark = self._marks.get(key)
            reason = self.verdict(key, t, time.time() if now is None else now)
            checked = self._checked.get(key)
            if reason is None:
                if checked is not None and line > checked:  # past what was checked: a new step asks again
                    del self._checked[key]
                return samples, events
            if _stepped(reason, t, mark) and checked is None:
                self._pending[key] = max(line, self._pending.get(key, 0))
                raise ClockStepSuspected(f"{path or source} line {line}: stamp {_iso(t)} is out of line with "
                                         f"{_iso(mark)}; reading the host's clock again first")
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


def _stepped(reason: str | None, t: float, mark: float | None) -> bool:
    """From the future, or more than STEP_S behind the watermark: what a step of the host's clock gives."""
    return reason == "future" or (reason == "late" and mark is not None and t < mark - STEP_S)


def _iso(t: float | None) -> str | None:
    if t is None:
        return None
    try:
        return dt.datetime.fromtimestamp(t, dt.UTC).replace(tzinfo=None).isoformat()
    except (OverflowError, OSError, ValueError):
        return repr(t)
