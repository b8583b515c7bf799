"""Which zone a host's naive log stamps are in, and how far its clock is off: pure logic, no I/O.

Inputs are what `collectors/clock.py` reads over the transport: the output of one `date` exec
(offset, epoch, zone name) bracketed by kvwatch's own clock, and per file its mtime and the naive
stamp of its newest line. A naive stamp is handled here as a "wall epoch": the stamp read as if it
were UTC (what `parsers.timestamps.to_epoch` gives), so wall epoch - offset = the UTC instant.

A file's writer may log in another zone than the login shell (a container in UTC on a host in
UTC+8), so the file's own evidence wins: its newest line was written moments before its mtime,
hence wall epoch of that line - mtime is the writer's offset, give or take the write latency.
Only offsets zones really use count, and only a latency of up to MATCH_TOLERANCE_S.
Host clock skew cancels out of that difference (both come from the host's clock).
"""

from __future__ import annotations

from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

HOUR_S = 3600
# The offsets off the whole hour that zones use (tzdata): Marquesas, Newfoundland, Iran, Afghanistan,
# India, Nepal, Myanmar, Eucla, central Australia, Lord Howe, Chatham. Only real offsets are
# candidates, so a line 31 min older than mtime is never taken for a "UTC-0:30" writer's.
FRACTIONAL_OFFSETS_S = tuple(
    round(hours * 3600)
    for hours in (-9.5, -3.5, -2.5, 3.5, 4.5, 5.5, 5.75, 6.5, 8.75, 9.5, 10.5, 12.75, 13.75)
)
MAX_OFFSET_S = 14 * 3600  # Kiribati; -12 h is the other end
# How far the newest line may lie before mtime: the write latency of a buffered logger. Below a
# quarter hour, so a line 40 min older than mtime is never mistaken for a UTC-0:30 writer's.
MATCH_TOLERANCE_S = 300.0
# Below this a measured skew is noise (1 s stamp resolution, half the SSH round trip): not corrected.
SKEW_CORRECT_MIN_S = 2.0


@dataclass(frozen=True, slots=True)
class HostClock:
    """One `date` on the host: its zone's current offset, its zone name if known, its clock skew."""

    utc_offset_s: int
    clock_skew_s: float  # host clock - kvwatch clock (positive: the host is ahead)
    timezone: str | None = None  # IANA name when the host tells it ($TZ or /etc/localtime)
    abbreviation: str = ""  # `date +%Z`: CST, EDT, UTC ...

    @property
    def skew_correction_s(self) -> float:
        """What to subtract from the host's clock readings (zero inside the measurement noise)."""
        return self.clock_skew_s if abs(self.clock_skew_s) >= SKEW_CORRECT_MIN_S else 0.0


def parse_offset(text: str) -> int | None:
    """`+0800` / `-0530` / `+08:00` / `Z` -> seconds east of UTC; None if it is not an offset."""
    text = text.strip()
    if text in ("Z", "z"):
        return 0
    digits = text[1:].replace(":", "")
    if len(text) < 3 or text[0] not in "+-" or not digits.isdigit() or len(digits) not in (2, 4):
        return None
    hours, minutes = int(digits[:2]), int(digits[2:] or 0)
    if hours > 14 or minutes >= 60:
        return None
    sign = -1 if text[0] == "-" else 1
    return sign * (hours * 3600 + minutes * 60)


def zone_name_from(tz_env: str, localtime_link: str) -> str | None:
    """The IANA zone name from `$TZ` (`Asia/Shanghai`, `:Asia/Shanghai`) or the /etc/localtime
    symlink target (`/usr/share/zoneinfo/Asia/Shanghai`); None when neither names one."""
    tz = tz_env.strip().lstrip(":")
    if tz.startswith("/"):  # TZ=/usr/share/zoneinfo/X is a file path: read like the link
        localtime_link, tz = tz, ""
    if tz:
        return tz if "/" in tz or tz.upper() == "UTC" else None  # "CST-8" is POSIX TZ syntax: no name
    marker = "zoneinfo/"
    if marker in localtime_link:
        name = localtime_link.split(marker, 1)[1].strip()
        return name.removeprefix("posix/").removeprefix("right/") or None
    return None


def parse_host_probe(stdout: str, sent_at: float, received_at: float) -> HostClock | None:
    """The probe's output (see collectors/clock.py: PROBE_SCRIPT) -> HostClock; None if garbled.

    Line 1: `$TZ`, line 2: the /etc/localtime link target, line 3: `date "+%z %Z %s.%N"`. The host's
    epoch is compared with the midpoint of kvwatch's clock around the exec (half the round trip is
    the uncertainty). busybox `date` prints `%N` literally: the epoch is then whole seconds.
    """
    lines = stdout.splitlines()
    if len(lines) < 3:
        return None
    fields = lines[2].split()
    if len(fields) != 3:
        return None
    offset = parse_offset(fields[0])
    epoch_text = fields[2].split(".")[0] if not fields[2].replace(".", "").isdigit() else fields[2]
    try:
        host_epoch = float(epoch_text)
    except ValueError:
        return None
    if offset is None:
        return None
    skew = host_epoch - (sent_at + received_at) / 2
    return HostClock(offset, round(skew, 3), zone_name_from(lines[0], lines[1]), fields[1])


def infer_file_offset(newest_wall_epoch: float, mtime: float,
                      tolerance_s: float = MATCH_TOLERANCE_S) -> int | None:
    """The zone offset (s) that puts the file's newest naive stamp just before its mtime; None
    when no real offset does (an old stamp in a file touched later, a line without a stamp)."""
    gap = newest_wall_epoch - mtime  # = offset - write latency
    candidates = [round(gap / HOUR_S) * HOUR_S, *FRACTIONAL_OFFSETS_S]
    best = min(candidates, key=lambda offset: abs(gap - offset))
    if abs(best) > MAX_OFFSET_S or best < -12 * 3600:
        return None
    # The line was written before (or, with mtime's coarse resolution, in the same second as) mtime.
    latency = best - gap
    return best if -2.0 <= latency <= tolerance_s else None


def is_zone_name(name: str | None) -> bool:
    """Is `name` an IANA zone this machine's zoneinfo knows (`Asia/Shanghai`, `UTC`)?"""
    if not name:
        return False
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # ValueError: not a relative key ("../x")
        return False
    return True
