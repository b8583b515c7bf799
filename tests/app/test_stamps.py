"""Naive stamps -> UTC per source (app/pipeline/stamps.py) on literal inputs."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest

from kvwatch.app.config import parse_config
from kvwatch.app.errors import ConfigError
from kvwatch.app.pipeline.rows import record_rows
from kvwatch.app.pipeline.stamps import Backlog, SourceClock, SourceClocks, ZoneChoice, choose_zone
from kvwatch.collectors.clock import FileProbe
from kvwatch.collectors.clock_infer import HostClock

SHANGHAI_HOST = HostClock(28800, 0.2, "Asia/Shanghai", "CST")
DECODE = ("[{} TP0] Decode batch, #running-req: 3, #token: 100, token usage: 0.50, cuda graph: True, "
          "gen throughput (token/s): 900.00, #queue-req: 0")


def utc(stamp: str) -> float:
    return dt.datetime.fromisoformat(stamp).timestamp()


def new_york() -> SourceClock:
    return SourceClock(ZoneChoice("config", "timezone key", timezone="America/New_York"))


def times(clock: SourceClock, stamps: list[str]) -> list[float]:
    out = []
    for stamp in stamps:
        t = clock.record_time({"kind": "decode", "ts": stamp}, 0.0)
        assert t is not None
        out.append(t)
    return out


def every_10_min(local_start: str, count: int, *, fall_back_at: int | None = None) -> list[str]:
    """Wall-clock stamps 10 min apart as a New York process logs them; at `fall_back_at` the wall
    clock goes back one hour (2026-11-01 02:00 EDT -> 01:00 EST)."""
    start = dt.datetime.fromisoformat(local_start)
    stamps = []
    for i in range(count):
        local = start + dt.timedelta(minutes=10 * i)
        if fall_back_at is not None and i >= fall_back_at:
            local -= dt.timedelta(hours=1)
        stamps.append(local.isoformat())
    return stamps


def test_fall_back_hour_resolved_by_log_order() -> None:
    # 00:00 .. 01:50 EDT, then 01:00 .. 02:50 EST: the 01:xx hour is logged twice
    stamps = every_10_min("2026-11-01T00:00:00", 24, fall_back_at=12)
    assert stamps[6] == stamps[12] == "2026-11-01T01:00:00"
    got = times(new_york(), stamps)
    assert got[0] == utc("2026-11-01T04:00:00+00:00")
    assert [b - a for a, b in itertools.pairwise(got)] == [600.0] * 23  # no tear, no overlap
    assert got[12] == utc("2026-11-01T06:00:00+00:00")  # the second 01:00 is EST


def test_spring_forward_skips_an_hour_without_a_gap_in_time() -> None:
    # 01:00 .. 01:50 EST, then 03:00 EDT on: 02:xx is never logged
    stamps = [f"2026-03-08T01:{m:02d}:00" for m in range(0, 60, 10)]
    stamps += [f"2026-03-08T03:{m:02d}:00" for m in range(0, 60, 10)]
    got = times(new_york(), stamps)
    assert got[0] == utc("2026-03-08T06:00:00+00:00")
    assert [b - a for a, b in itertools.pairwise(got)] == [600.0] * 11


def test_lines_slightly_out_of_order_inside_the_repeated_hour_keep_the_first_reading() -> None:
    got = times(new_york(), ["2026-11-01T01:20:00", "2026-11-01T01:19:58", "2026-11-01T01:20:01"])
    assert got == [utc("2026-11-01T05:20:00+00:00"), utc("2026-11-01T05:19:58+00:00"),
                   utc("2026-11-01T05:20:01+00:00")]


def test_fixed_offset_skew_and_explicit_offsets() -> None:
    clock = SourceClock(ZoneChoice("detected", "file mtime", 28800), skew_correction_s=3600.0)
    # 23:00 in UTC+8 on a host 1 h ahead: 15:00 UTC on the host's clock, 14:00 UTC really
    assert clock.record_time({"ts": "2026-12-03T23:00:00"}, 0) == utc("2026-12-03T14:00:00+00:00")
    # a stamp with its own offset (parsed from `...Z`) is honoured, the zone is not applied
    assert clock.record_time({"ts": "2026-12-03T15:00:00", "utc_offset_s": 0}, 0) == utc("2026-12-03T14:00:00+00:00")
    assert clock.report()["offset_from"] == "explicit" and clock.explicit == 1


@pytest.mark.parametrize("stamp", ["2026-12-03T15:00:00Z", "2026-12-03T23:00:00+08:00", "2026-12-03 10:00:00-0500"])
def test_a_zone_left_on_the_stamp_is_honoured(stamp: str) -> None:
    clock = SourceClock(ZoneChoice("config", "timezone key", timezone="Asia/Tokyo"))
    assert clock.record_time({"ts": stamp}, 0) == utc("2026-12-03T15:00:00+00:00")
    assert clock.report()["offset_from"] == "explicit"


def _decode(line: str) -> dict[str, object]:
    from kvwatch.parsers import create_parser

    parser = create_parser("sglang")
    (record,) = [r for r in [*parser.feed(1, line), *parser.flush()] if r.get("kind") == "decode"]
    return record


DECODE_BODY = "Decode batch, #running-req: 3, #token: 100, token usage: 0.10, gen throughput (token/s): 12.5, "


def test_the_parsers_zone_reaches_the_clock() -> None:
    """Dynamo's RFC 3339 stamp carries UTC: the host's own zone is not applied to it."""
    record = _decode(f"2026-12-03T15:00:00.000000Z INFO sglang: {DECODE_BODY}")
    assert record["tz"] == "+00:00"
    clock = SourceClock(ZoneChoice("config", "timezone key", timezone="Asia/Shanghai"))
    assert clock.record_time(record, 0) == utc("2026-12-03T15:00:00+00:00")
    assert clock.report()["offset_from"] == "explicit"


def test_behind_a_docker_stamp_the_servers_own_naive_stamp_is_read_in_its_zone() -> None:
    record = _decode(f"2026-12-03T07:00:00.123456789Z [2026-12-03 15:00:00] {DECODE_BODY}")
    assert record["ts"] == "2026-12-03T15:00:00" and "tz" not in record
    clock = SourceClock(ZoneChoice("config", "timezone key", timezone="Asia/Shanghai"))
    assert clock.record_time(record, 0) == utc("2026-12-03T07:00:00+00:00")


def test_time_only_stamps_take_the_writers_local_day() -> None:
    clock = SourceClock(ZoneChoice("detected", "host shell", 28800))
    now = utc("2026-12-03T17:00:00+00:00")  # already Dec 4 in UTC+8
    assert clock.record_time({"ts": "01:00:00"}, now) == utc("2026-12-03T17:00:00+00:00")


def test_choice_ranks_config_then_file_then_shell() -> None:
    assert choose_zone("Europe/Berlin", SHANGHAI_HOST, 0).offset_from == "config"
    container = choose_zone(None, SHANGHAI_HOST, 0)  # logs in UTC on a UTC+8 host
    assert (container.utc_offset_s, container.timezone, container.basis) == (0, None, "file mtime")
    same = choose_zone(None, SHANGHAI_HOST, 28800)
    assert same.timezone == "Asia/Shanghai" and same.basis == "file mtime"  # named: follows DST
    assert choose_zone(None, SHANGHAI_HOST, None).basis == "host shell"
    assert choose_zone(None, None, None) == ZoneChoice("assumed", "none")


def test_records_without_stamps_sit_at_the_backlogs_mtime_not_at_reading() -> None:
    clock = SourceClock(ZoneChoice("detected", "host shell", 0), 100.0, Backlog(5000, 1000.0, 2000))
    assert clock.appeared_at(4000, now=9999.0) == 900.0  # written by mtime (host clock - skew)
    assert clock.appeared_at(5100, now=9999.0) == 9999.0  # appeared after the connect: live
    samples, _ = record_rows({"kind": "progress", "done": 7, "total": 10}, now=clock.appeared_at(10, 9999.0),
                             clock=clock)
    assert {s.t for s in samples} == {900.0}


def test_sources_infer_the_zone_from_their_newest_line() -> None:
    mtime = utc("2026-12-03T15:59:59+00:00")
    probe = FileProbe(mtime, 4096, (DECODE.format("2026-12-03 23:59:40"), DECODE.format("2026-12-03 23:59:58")))
    clocks = SourceClocks()
    report = clocks.observe("server_log", "/x/server.log", SHANGHAI_HOST, probe, 0)
    assert report["utc_offset_s"] == 28800 and report["offset_from"] == "detected"
    assert report["detected_by"] == "file mtime" and report["timezone"] == "Asia/Shanghai"
    utc_writer = FileProbe(mtime, 4096, (DECODE.format("2026-12-03 15:59:58"),))
    assert clocks.observe("server_log", "/y/server.log", SHANGHAI_HOST, utc_writer, 0)["utc_offset_s"] == 0
    configured = SourceClocks("America/New_York").observe("server_log", "/x", SHANGHAI_HOST, probe, 0)
    assert configured["offset_from"] == "config" and configured["timezone"] == "America/New_York"


def test_timezone_key_is_validated() -> None:
    host = {"name": "gpu1", "ssh": "local", "server_log": "/tmp/x.log"}
    config = parse_config({"hosts": [{**host, "timezone": "Asia/Shanghai"}]})
    assert config.hosts[0].timezone == "Asia/Shanghai"
    with pytest.raises(ConfigError) as err:
        parse_config({"hosts": [{**host, "timezone": "Asia/Shangai"}]}, "kvwatch.toml")
    message = str(err.value)
    assert "\n" not in message and "kvwatch.toml: hosts['gpu1'].timezone: unknown zone 'Asia/Shangai'" in message
    with pytest.raises(ConfigError, match=r"timezone: expected str"):
        parse_config({"hosts": [{**host, "timezone": 8}]})


def test_a_newer_host_reading_retimes_skew_and_the_shells_fixed_offset() -> None:
    clocks = SourceClocks()
    posix_tz_host = HostClock(-18000, 0.0, None, "EST")  # TZ=EST5EDT-like: only an offset is known
    clocks.observe("server_log", "/a", posix_tz_host, None, 0)
    clocks.observe("client_log", "/b", posix_tz_host, FileProbe(1000.0, 10, ()), 0)
    clocks.retime(HostClock(-14400, 5.0, None, "EDT"))
    server_log = clocks.get("server_log", "/a")
    assert server_log is not None and server_log.skew_correction_s == 5.0
    assert server_log.report()["utc_offset_s"] == -14400
    clocks.retime(HostClock(-14400, 5.4, None, "EDT"))  # a change inside the noise: left alone
    assert server_log.skew_correction_s == 5.0


def test_a_reconnect_inside_the_repeated_hour_keeps_the_log_order() -> None:
    clocks = SourceClocks("America/New_York")
    clocks.observe("server_log", "/a", None, None, 0)
    first = clocks.get("server_log", "/a")
    assert first is not None
    times(first, ["2026-11-01T01:50:00", "2026-11-01T01:05:00"])  # the wall clock went back
    clocks.observe("server_log", "/a", None, None, 0)  # SSH dropped and came back
    again = clocks.get("server_log", "/a")
    assert again is not first and again is not None
    assert times(again, ["2026-11-01T01:10:00"]) == [utc("2026-11-01T06:10:00+00:00")]  # still EST
