"""Per host: each followed source's SourceClock, decided from the host's clock and the file's probe.

The host loop (collectors/host.py) probes the host's clock and each file's mtime and last lines on
every connect, and hands them here. The newest stamped line of the file is parsed with a fresh
parser of the source's kind (its own state untouched) to infer the writer's zone
(collectors/clock_infer.py); `choose_zone` then ranks config > file evidence > login shell.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from kvwatch.app.pipeline.stamps import Backlog, SourceClock, choose_zone
from kvwatch.collectors.clock import FileProbe
from kvwatch.collectors.clock_infer import HostClock, infer_file_offset
from kvwatch.parsers import create_parser
from kvwatch.parsers.timestamps import to_epoch

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
