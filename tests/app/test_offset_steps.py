"""A writer known only by a fixed offset follows its DST steps through its live lines
(app/pipeline/offset_steps.py, SourceClock.follow_live), on literal inputs."""

from __future__ import annotations

import datetime as dt
import time

from kvwatch.app.pipeline.batches import BatchBuilder
from kvwatch.app.pipeline.offset_steps import follow_offset
from kvwatch.app.pipeline.stamps import Backlog, SourceClock, ZoneChoice
from kvwatch.collectors.base import Line
from kvwatch.parsers import create_parser

EST, EDT = -5 * 3600, -4 * 3600
DECODE = ("[{} TP0] Decode batch, #running-req: {}, #token: 100, token usage: 0.50, cuda graph: True, "
          "gen throughput (token/s): 900.00, #queue-req: 0")
READ_AT = 1_796_000_000.0  # a UTC epoch: when the line was read


def wall(instant: float, offset: int) -> float:
    """A naive stamp written at `instant` by a writer at `offset`, read as if it were UTC."""
    return instant + offset


def test_a_line_that_fits_the_offset_in_use_changes_nothing() -> None:
    assert follow_offset(EST, wall(READ_AT - 1, EST), READ_AT) == EST
    assert follow_offset(EST, wall(READ_AT - 200, EST), READ_AT) == EST  # a buffered writer's line


def test_a_line_one_dst_step_away_takes_that_offset() -> None:
    assert follow_offset(EST, wall(READ_AT - 1, EDT), READ_AT) == EDT  # spring forward
    assert follow_offset(EDT, wall(READ_AT - 1, EST), READ_AT) == EST  # fall back
    lord_howe_summer, lord_howe = 11 * 3600, 10 * 3600 + 1800
    assert follow_offset(lord_howe, wall(READ_AT - 2, lord_howe_summer), READ_AT) == lord_howe_summer


def test_a_stamp_no_step_explains_leaves_the_offset_alone() -> None:
    assert follow_offset(EST, wall(READ_AT - 3 * 3600, EST), READ_AT) == EST  # three hours old
    assert follow_offset(EST, wall(READ_AT + 600, EST), READ_AT) == EST  # ten minutes ahead
    assert follow_offset(EST, wall(READ_AT - 1, 8 * 3600), READ_AT) == EST  # another zone entirely


def stamp(instant: float, offset: int) -> str:
    return dt.datetime.fromtimestamp(instant, dt.timezone(dt.timedelta(seconds=offset))).strftime("%Y-%m-%d %H:%M:%S")


def detected_est(backlog_size: int = 100) -> SourceClock:
    """A container's log in EST on a host whose shell is elsewhere: an offset with no zone name."""
    return SourceClock(ZoneChoice("detected", "file mtime", EST), 0.0, Backlog(backlog_size, time.time() - 60, 0))


def lines_of(texts: list[str], first_offset: int) -> list[Line]:
    return [Line("server_log", 1, first_offset + 200 * i, i + 1, text) for i, text in enumerate(texts)]


def stored_times(builder: BatchBuilder, clock: SourceClock, texts: list[str], first_offset: int) -> list[float]:
    batch, _, _ = builder.from_lines("server_log", "/log", create_parser("sglang"), lines_of(texts, first_offset),
                                     None, clock)
    return sorted({s.t for s in batch.samples if s.metric == "running_req"})


def test_live_lines_across_a_spring_forward_stay_at_their_instants() -> None:
    clock = detected_est()
    now = float(int(time.time()))
    instants = [now - 4, now - 3, now - 2, now - 1]
    texts = [DECODE.format(stamp(t, EST if i < 2 else EDT), i) for i, t in enumerate(instants)]
    assert stored_times(BatchBuilder("gpu1"), clock, texts, 1000) == instants
    report = clock.report()
    assert report["utc_offset_s"] == EDT
    assert [(s["from_utc_offset_s"], s["to_utc_offset_s"]) for s in report["offset_steps"]] == [(EST, EDT)]
    assert report["offset_steps"][0]["at"] == instants[2]


def test_live_lines_across_a_fall_back_stay_at_their_instants() -> None:
    clock = SourceClock(ZoneChoice("detected", "file mtime", EDT), 0.0, Backlog(100, time.time() - 60, 0))
    now = float(int(time.time()))
    instants = [now - 3, now - 2, now - 1]
    texts = [DECODE.format(stamp(t, EDT if i == 0 else EST), i) for i, t in enumerate(instants)]
    assert stored_times(BatchBuilder("gpu1"), clock, texts, 1000) == instants
    assert clock.report()["utc_offset_s"] == EST


def test_backlog_lines_never_move_the_offset() -> None:
    """Lines already in the file at connect are old: their distance to now says nothing of zones."""
    clock = detected_est(backlog_size=10_000)
    an_hour_ago = float(int(time.time())) - 3600
    texts = [DECODE.format(stamp(an_hour_ago, EST), 1)]
    assert stored_times(BatchBuilder("gpu1"), clock, texts, 1000) == [an_hour_ago]
    assert clock.report()["utc_offset_s"] == EST and clock.report()["offset_steps"] == []


def test_one_odd_line_does_not_carry_the_lines_after_it() -> None:
    """A line an hour late (say a block a buffered writer held) is read as the step it looks like,
    and the next line, fitting the old offset again, steps back: each line by its own evidence."""
    clock = detected_est()
    now = float(int(time.time()))
    texts = [DECODE.format(stamp(now - 3600 - 2, EST), 1), DECODE.format(stamp(now - 1, EST), 2)]
    assert stored_times(BatchBuilder("gpu1"), clock, texts, 1000)[-1] == now - 1
    assert clock.report()["utc_offset_s"] == EST


def test_a_named_zone_or_the_timezone_key_is_not_moved_by_lines() -> None:
    for choice in (ZoneChoice("config", "timezone key", timezone="America/New_York"),
                   ZoneChoice("detected", "file mtime", EST, "America/New_York"),
                   ZoneChoice("assumed", "none")):
        clock = SourceClock(choice, 0.0, None)
        before = clock.choice
        clock.follow_live([{"kind": "decode", "ts": stamp(time.time(), EDT + 3600)}], time.time())
        assert clock.choice == before and clock.steps == []
