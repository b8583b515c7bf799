"""A source's naive log stamps -> the UTC instant they happened (pure: no I/O, no clock reads).

Each followed file gets a `SourceClock`: the zone its writer logs in (the host's `timezone` key,
else detected from the file and the host, see collectors/clock_infer.py), and the host's clock
skew to take off. A record whose stamp carried its own offset (the parsers' `tz`, `+HH:MM` for a
`Z` / `+08:00` stamp, or `utc_offset_s`) is honoured as is.

With a named zone each stamp is resolved by zoneinfo, so a DST change inside a log does not tear
the series. The hour a fall-back repeats is ambiguous; the log's order decides: once the wall clock
has gone back, the later reading (fold=1) is the one that keeps the series monotonic.

Per host, `SourceClocks` holds each followed source's SourceClock, decided from the host's clock and
the file's probe: the host loop (collectors/host.py) probes both on every connect and hands them
here. The newest stamped line of the file is parsed with a fresh parser of the source's kind (its own
state untouched) to infer the writer's zone (collectors/clock_infer.py); `choose_zone` then ranks
config > file evidence > login shell.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from dataclasses import dataclass
from typing import Any, Literal
from zoneinfo import ZoneInfo

from kvwatch.app.pipeline.offset_steps import OffsetStep, follow_offset
from kvwatch.collectors.clock import FileProbe
from kvwatch.collectors.clock_infer import HostClock, infer_file_offset, is_zone_name, parse_offset
from kvwatch.parsers import create_parser
from kvwatch.parsers.timestamps import to_epoch

OffsetFrom = Literal["config", "detected", "explicit", "assumed"]
# Lines of different ranks or threads may come a little out of order; a step back by more than this
# inside an ambiguous hour is the fall-back itself.
FOLD_BACKSTEP_S = 600.0
MAX_STEPS_SHOWN = 10  # /api/hosts shows a source's latest offset steps
ZONED_STAMP = re.compile(r"(.*\d:\d\d(?:[.,]\d+)?)\s?(Z|[+-]\d\d:?\d\d)")


@dataclass(frozen=True, slots=True)
class ZoneChoice:
    """The zone a source's naive stamps are read in, and how it was found."""

    offset_from: OffsetFrom
    basis: str  # "timezone key", "file mtime", "host shell", "none"
    utc_offset_s: int = 0  # fixed offset when `timezone` is None
    timezone: str | None = None


def choose_zone(config_zone: str | None, host: HostClock | None, file_offset: int | None,
                at: float | None = None) -> ZoneChoice:
    """Config beats the file's own evidence, which beats the login shell's zone (a container may
    log in another zone than the shell). A detected offset that is the host zone's current offset
    takes the host zone's name, so its DST changes are followed too."""
    if config_zone:
        return ZoneChoice("config", "timezone key", timezone=config_zone)
    host_zone = host.timezone if host is not None and is_zone_name(host.timezone) else None
    if file_offset is not None:
        if host_zone is not None and _offset_at(host_zone, at) == file_offset:
            return ZoneChoice("detected", "file mtime", file_offset, host_zone)
        return ZoneChoice("detected", "file mtime", file_offset)
    if host is not None:
        return ZoneChoice("detected", "host shell", host.utc_offset_s, host_zone)
    return ZoneChoice("assumed", "none")


@dataclass(frozen=True, slots=True)
class Backlog:
    """What a file held when kvwatch (re)connected: lines up to `size` appeared by `mtime` (host
    clock), however late they are read; `resume_offset` is where reading resumed."""

    size: int
    mtime: float
    resume_offset: int

    @property
    def behind(self) -> bool:
        return self.size > self.resume_offset


class SourceClock:
    """Converts one file's records' stamps; keeps the state the fold rule needs (the last instant)."""

    def __init__(self, choice: ZoneChoice, skew_correction_s: float = 0.0,
                 backlog: Backlog | None = None) -> None:
        self.choice = choice
        self.skew_correction_s = skew_correction_s
        self.backlog = backlog
        self.backlog_marked = False  # its catch-up event is stored (app/pipeline/batches.py)
        self._zone = ZoneInfo(choice.timezone) if choice.timezone else None
        self._last_utc: float | None = None
        self._hour_offsets: dict[int, tuple[int, int] | None] = {}  # wall hour -> (fold 0, fold 1) offsets
        self.explicit = 0  # records whose stamp carried its own offset
        self.steps: list[OffsetStep] = []  # DST steps of a fixed offset, seen in live lines

    def continue_from(self, before: SourceClock) -> None:
        """Keep the fold rule's memory and the explicit count of the same file's previous clock."""
        self._last_utc, self.explicit = before._last_utc, before.explicit
        self.steps = before.steps

    def appeared_at(self, offset: int, now: float) -> float:
        """When a line without a stamp (ending at byte `offset`) appeared: read live, now; part of
        the backlog found at connect, the file's mtime then (host clock, skew taken off)."""
        backlog = self.backlog
        if backlog is not None and offset <= backlog.size:
            return min(now, backlog.mtime - self.skew_correction_s)
        return now

    def is_live(self, offset: int) -> bool:
        """Did the line ending at byte `offset` appear after kvwatch (re)connected?"""
        return self.backlog is None or offset > self.backlog.size

    def follow_live(self, records: list[dict[str, Any]], read_at: float) -> None:
        """A line read live: its first naive stamp may say that a writer known only by a fixed
        offset has stepped to another (DST, app/pipeline/offset_steps.py)."""
        if self._zone is not None or self.choice.offset_from != "detected":
            return
        for record in records:
            wall, explicit = self._wall(record, read_at)
            if wall is None or explicit is not None:
                continue
            before = self.choice.utc_offset_s
            after = follow_offset(before, wall, read_at + self.skew_correction_s)
            if after != before:
                self.steps.append(OffsetStep(wall - after - self.skew_correction_s, before, after))
                self.choice = dataclasses.replace(self.choice, utc_offset_s=after)
            return

    def record_time(self, record: dict[str, Any], now: float) -> float | None:
        """The record's UTC epoch; None when it has no usable stamp (the caller picks a read time)."""
        wall, explicit = self._wall(record, now)
        if wall is None:
            return None
        if explicit is not None:
            self.explicit += 1
            return wall - explicit - self.skew_correction_s
        return self.utc(wall) - self.skew_correction_s

    def _wall(self, record: dict[str, Any], now: float) -> tuple[float | None, int | None]:
        """The record's stamp as a wall epoch (read as if UTC), and the offset the stamp carried."""
        ts = record.get("ts")
        if not isinstance(ts, str):
            return None, None
        explicit = record.get("utc_offset_s")
        if explicit is None and isinstance(record.get("tz"), str):  # the parsers' `tz`: `+08:00` for `Z`/offsets
            explicit = parse_offset(record["tz"])
        zoned = ZONED_STAMP.fullmatch(ts)
        if zoned is not None and explicit is None:  # `...Z` / `...+08:00` left on the stamp itself
            ts, explicit = zoned.group(1), parse_offset(zoned.group(2))
        if not isinstance(explicit, int) or isinstance(explicit, bool):
            explicit = None
        return to_epoch(ts, self._local_day(now)), explicit

    def utc(self, wall: float) -> float:
        """A naive stamp's wall epoch (read as if UTC) -> the UTC epoch in this source's zone."""
        if self._zone is None:
            return wall - self.choice.utc_offset_s
        first, second = self._readings(wall)
        # fold=1 is later only inside a repeated hour; in a skipped hour it is earlier: keep fold=0.
        chosen = first
        if second > first and self._last_utc is not None and first < self._last_utc - FOLD_BACKSTEP_S:
            chosen = second
        self._last_utc = chosen if self._last_utc is None else max(self._last_utc, chosen)
        return chosen

    def _readings(self, wall: float) -> tuple[float, float]:
        """Both zoneinfo readings (fold 0 and 1) of a wall time as UTC epochs. zoneinfo costs ~50 us a
        stamp, so each wall hour's offsets are kept when they hold for the whole hour (checked at
        both its ends: a zone that changes at half past is resolved stamp by stamp there)."""
        hour = int(wall // 3600)
        if hour not in self._hour_offsets:
            if len(self._hour_offsets) > 4096:  # a catch-up of months: keep memory bounded
                self._hour_offsets.clear()
            start, end = self._offsets(hour * 3600.0), self._offsets(hour * 3600.0 + 3599.0)
            self._hour_offsets[hour] = start if start == end else None
        offsets = self._hour_offsets[hour] or self._offsets(wall)
        return wall - offsets[0], wall - offsets[1]

    def _offsets(self, wall: float) -> tuple[int, int]:
        naive = dt.datetime.fromtimestamp(wall, dt.UTC).replace(tzinfo=None)
        first = naive.replace(tzinfo=self._zone, fold=0).utcoffset()
        second = naive.replace(tzinfo=self._zone, fold=1).utcoffset()
        assert first is not None and second is not None
        return int(first.total_seconds()), int(second.total_seconds())

    def _local_day(self, now: float) -> dt.date:
        """Time-only stamps take the writer's local date, not kvwatch's UTC one."""
        if self._zone is not None:
            return dt.datetime.fromtimestamp(now, self._zone).date()
        return dt.datetime.fromtimestamp(now + self.choice.utc_offset_s, dt.UTC).date()

    def report(self) -> dict[str, Any]:
        """For GET /api/hosts: the offset used for this source and how it was found."""
        offset = self.choice.utc_offset_s
        if self._zone is not None:
            offset = _offset_at(self.choice.timezone or "UTC", None) or 0
        return {
            "utc_offset_s": offset,
            "timezone": self.choice.timezone,
            "offset_from": "explicit" if self.explicit else self.choice.offset_from,
            "detected_by": self.choice.basis,
            "explicit_stamps": self.explicit,
            "skew_corrected_s": self.skew_correction_s,
            "offset_steps": [{"at": step.at, "from_utc_offset_s": step.before, "to_utc_offset_s": step.after}
                             for step in self.steps[-MAX_STEPS_SHOWN:]],
        }


def _offset_at(zone: str, at: float | None) -> int | None:
    moment = dt.datetime.now(dt.UTC) if at is None else dt.datetime.fromtimestamp(at, dt.UTC)
    delta = moment.astimezone(ZoneInfo(zone)).utcoffset()
    return None if delta is None else int(delta.total_seconds())


RETIME_MIN_S = 1.0
PARSER_OF_SOURCE = {"server_log": "auto", "client_log": "client", "gpu": "nvidia-smi"}


class SourceClocks:
    def __init__(self, timezone: str | None = None) -> None:
        self.timezone = timezone
        self.host: HostClock | None = None
        self._clocks: dict[tuple[str, str], SourceClock] = {}

    def get(self, kind: str, path: str) -> SourceClock | None:
        return self._clocks.get((kind, path))

    def observe(self, kind: str, path: str, host: HostClock | None, probe: FileProbe | None,
                resume_offset: int = 0) -> dict[str, Any]:
        """A (re)connect's facts about one source -> its SourceClock; returns its report."""
        self.host = host
        file_offset = newest_offset(kind, probe) if probe is not None and self.timezone is None else None
        choice = choose_zone(self.timezone, host, file_offset, probe.mtime if probe else None)
        backlog = Backlog(probe.size, probe.mtime, resume_offset) if probe is not None else None
        skew = host.skew_correction_s if host is not None else 0.0
        clock = SourceClock(choice, skew, backlog)
        before = self._clocks.get((kind, path))
        if before is not None and before.choice == choice:  # a reconnect inside a repeated hour
            clock.continue_from(before)
        self._clocks[(kind, path)] = clock
        return clock.report()

    def retime(self, host: HostClock) -> None:
        """A newer reading of the host's clock: its skew, and its offset for sources read in the
        login shell's fixed offset. A change of the skew correction below RETIME_MIN_S is left out,
        so the series do not step back and forth by the measurement's noise."""
        self.host = host
        for clock in self._clocks.values():
            if abs(host.skew_correction_s - clock.skew_correction_s) >= RETIME_MIN_S:
                clock.skew_correction_s = host.skew_correction_s
            if clock.choice.basis == "host shell" and clock.choice.timezone is None:
                clock.choice = dataclasses.replace(clock.choice, utc_offset_s=host.utc_offset_s)

    def live(self, kind: str) -> SourceClock:
        """GPU samples: stamped by nvidia-smi in the host's zone; no file, so no backlog."""
        clock = self._clocks.get((kind, ""))
        if clock is None or clock.choice != choose_zone(self.timezone, self.host, None):
            skew = self.host.skew_correction_s if self.host is not None else 0.0
            clock = SourceClock(choose_zone(self.timezone, self.host, None), skew)
            self._clocks[(kind, "")] = clock
        return clock


def newest_offset(kind: str, probe: FileProbe) -> int | None:
    """The zone offset the file's newest stamped line implies (with its mtime), or None."""
    wall = newest_wall_epoch(kind, probe)
    return infer_file_offset(wall, probe.mtime) if wall is not None else None


def newest_wall_epoch(kind: str, probe: FileProbe) -> float | None:
    name = PARSER_OF_SOURCE.get(kind)
    if name is None or not probe.newest_lines:
        return None
    parser = create_parser(name)
    records = [r for i, text in enumerate(probe.newest_lines, 1) for r in parser.feed(i, text)]
    records += parser.flush()
    # A year-less or time-only stamp lacks the date in a zone still unknown: the day nearest mtime.
    day = dt.datetime.fromtimestamp(probe.mtime, dt.UTC).date()
    for record in reversed(records):
        ts = record.get("ts")
        if isinstance(ts, str) and record.get("utc_offset_s") is None:
            wall = to_epoch(ts)
            return wall if wall is not None else _near_day(ts, day, probe.mtime)
    return None


def _near_day(ts: str, day: dt.date, mtime: float) -> float | None:
    """A time-only/year-less stamp on the local day nearest mtime (within +-14 h is all zones)."""
    best: float | None = None
    for shift in (-1, 0, 1):
        wall = to_epoch(ts, day + dt.timedelta(days=shift))
        if wall is not None and (best is None or abs(wall - mtime) < abs(best - mtime)):
            best = wall
    return best
