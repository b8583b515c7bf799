"""Zone and skew inference on literal inputs (collectors/clock_infer.py): no host, no files."""

from __future__ import annotations

import datetime as dt

import pytest

from kvwatch.collectors.clock_infer import (
    HostClock,
    infer_file_offset,
    is_zone_name,
    parse_host_probe,
    parse_offset,
    zone_name_from,
)


def wall(stamp: str) -> float:
    """A naive stamp read as if it were UTC (what parsers.timestamps.to_epoch gives)."""
    return dt.datetime.fromisoformat(stamp).replace(tzinfo=dt.UTC).timestamp()


def utc(stamp: str) -> float:
    return dt.datetime.fromisoformat(stamp).timestamp()


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("+0800", 28800), ("-0500", -18000), ("+0530", 19800), ("+05:45", 20700), ("Z", 0), ("+0000", 0)],
)
def test_offsets_as_date_and_iso_print_them(text: str, seconds: int) -> None:
    assert parse_offset(text) == seconds


@pytest.mark.parametrize("text", ["0800", "+8", "+1500", "+08:61", "CST", ""])
def test_what_is_not_an_offset(text: str) -> None:
    assert parse_offset(text) is None


def test_zone_name_from_tz_or_the_localtime_link() -> None:
    assert zone_name_from("Asia/Shanghai", "") == "Asia/Shanghai"
    assert zone_name_from(":Europe/Berlin", "/usr/share/zoneinfo/UTC") == "Europe/Berlin"
    assert zone_name_from("", "/usr/share/zoneinfo/America/New_York") == "America/New_York"
    assert zone_name_from("", "../usr/share/zoneinfo/posix/Asia/Tokyo") == "Asia/Tokyo"
    assert zone_name_from("CST-8", "/usr/share/zoneinfo/UTC") is None  # POSIX rule: no IANA name
    assert zone_name_from("", "") is None


def test_host_probe_gives_offset_zone_and_skew() -> None:
    # kvwatch sent at 100.0 and had the answer at 100.2: the host said 3700.1 -> 3600 s ahead
    out = "\n/usr/share/zoneinfo/Asia/Shanghai\n+0800 CST 3700.100000000\n"
    clock = parse_host_probe(out, 100.0, 100.2)
    assert clock == HostClock(28800, 3600.0, "Asia/Shanghai", "CST")
    assert clock.skew_correction_s == 3600.0


def test_busybox_date_without_nanoseconds_and_a_small_skew_left_alone() -> None:
    clock = parse_host_probe("\n\n-0500 EST 1000.N\n", 999.9, 1000.3)
    assert clock is not None and clock.utc_offset_s == -18000 and clock.timezone is None
    assert clock.clock_skew_s == pytest.approx(-0.1)
    assert clock.skew_correction_s == 0.0  # inside the measurement noise


def test_garbled_probe_is_none() -> None:
    assert parse_host_probe("sh: date: not found\n", 0, 1) is None
    assert parse_host_probe("\n\nxx yy zz\n", 0, 1) is None


def test_a_utc_plus_8_writer_is_recognised_from_mtime() -> None:
    # the newest line says 23:59:58 (naive), the file was last written at 15:59:59 UTC
    assert infer_file_offset(wall("2026-12-03T23:59:58"), utc("2026-12-03T15:59:59+00:00")) == 28800


def test_half_and_quarter_hour_and_western_zones() -> None:
    mtime = utc("2026-12-03T12:00:30+00:00")
    assert infer_file_offset(wall("2026-12-03T17:30:05"), mtime) == 19800  # India, line 25 s before mtime
    assert infer_file_offset(wall("2026-12-03T17:45:10"), mtime) == 20700  # Nepal
    assert infer_file_offset(wall("2026-12-03T07:00:00"), mtime) == -18000  # New York in winter
    assert infer_file_offset(wall("2026-12-03T12:00:29"), mtime) == 0


def test_a_buffered_writer_a_few_minutes_behind_still_counts() -> None:
    assert infer_file_offset(wall("2026-12-03T19:56:00"), utc("2026-12-03T12:00:00+00:00")) == 28800


def test_no_zone_explains_an_old_line_or_a_line_after_mtime() -> None:
    mtime = utc("2026-12-03T12:00:00+00:00")
    assert infer_file_offset(wall("2026-12-03T11:40:00"), mtime) is None  # 20 min old: not a writer's zone
    assert infer_file_offset(wall("2026-02-24T12:49:14"), mtime) is None  # a log from months ago
    assert infer_file_offset(wall("2026-12-03T12:01:00"), mtime) is None  # written after its own mtime?
    assert infer_file_offset(wall("2026-12-04T03:00:00"), mtime) is None  # +15 h: no such zone
    assert infer_file_offset(wall("2026-12-03T11:28:20"), mtime) is None  # 31 min old: no zone is -0:30


def test_zone_names() -> None:
    assert is_zone_name("Asia/Shanghai") and is_zone_name("UTC") and is_zone_name("America/New_York")
    assert not is_zone_name("Mars/Olympus") and not is_zone_name("../etc/passwd") and not is_zone_name("")
