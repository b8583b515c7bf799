"""A writer's zone known only as a fixed offset follows its DST steps by the lines it writes live.

A file's offset is found at connect from its newest stamp against its mtime
(collectors/clock_infer.py). When no zone name goes with it (a container logging in local time on a
host whose shell is in another zone), nothing says when that writer's offset changes. But a line read
live appeared moments ago, so its stamp says its writer's offset at that moment, the same evidence as
at connect: the offset that puts the stamp just before the time the line was read. A live line that
fits the offset in use changes nothing; one that fits it only one DST step away (an hour, or Lord
Howe's half hour) is read in that offset, which then holds for the lines after it. A line that fits
neither (a buffered writer's late block, a stamp copied from elsewhere) leaves the offset alone.

Pure: no I/O, no clock reads; times are passed in.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvwatch.collectors.clock_infer import MATCH_TOLERANCE_S

DST_STEPS_S = (3600, -3600, 1800, -1800)
# A live line is read after it is written; a little before is stamp resolution and measurement noise
# (a skew under the correction threshold is left in the host's readings).
EARLY_SLACK_S = 5.0


@dataclass(frozen=True, slots=True)
class OffsetStep:
    """The writer's offset changed: at about `at` (UTC epoch), from `before` to `after` (s east of UTC)."""

    at: float
    before: int
    after: int


def follow_offset(utc_offset_s: int, wall: float, read_at: float) -> int:
    """A live line's naive stamp (`wall`: read as if UTC) and when it was read (host clock, UTC
    epoch) -> the offset to read it in: the one in use when it fits, else the one a DST step away
    that fits, else (no step explains the stamp) the one in use."""
    if _fits(utc_offset_s, wall, read_at):
        return utc_offset_s
    for step in DST_STEPS_S:
        if _fits(utc_offset_s + step, wall, read_at):
            return utc_offset_s + step
    return utc_offset_s


def _fits(offset: int, wall: float, read_at: float) -> bool:
    latency = read_at - (wall - offset)
    return -EARLY_SLACK_S <= latency <= MATCH_TOLERANCE_S
