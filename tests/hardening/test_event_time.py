"""Issue #22, finding 1: one line stamped in the future (or in year 1) must not blind a host.

Two hosts get the same five minutes of `token usage: 0.97` every 2 s through the real local collector
and SQLite store; host b had first logged one line an hour ahead, one in year 1 and later one in year
9999, each with usage 0.11. Both hosts must alert alike, b must not look stale, /metrics and the
stored extent must be the real lines', and /api/hosts must count and name the outliers."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from kvwatch.app.alerts.engine import AlertEngine
from kvwatch.app.alerts.rules import rules_for_host
from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.pipeline.watermark import StampGuard
from kvwatch.app.runner import build_services
from kvwatch.app.store.base import Sample
from kvwatch.collectors.sinks import ClockStepSuspected
from tests.app.slice_helpers import wait_until

LINE = ("[{stamp} TP0] Decode batch, #running-req: {running}, #token: 1000, token usage: {usage:.2f}, "
        "cuda graph: True, gen throughput (token/s): 900.00, #queue-req: 3\n")
SPAN_S, STEP_S = 300, 2


def line(stamp: str, running: int, usage: float) -> str:
    return LINE.format(stamp=stamp, running=running, usage=usage)


def local_stamp(t: float) -> str:
    return dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S")  # naive, in this machine's zone


def saturated(now: float) -> list[str]:
    first = now - SPAN_S
    return [line(local_stamp(first + i * STEP_S), 100 + i, 0.97) for i in range(SPAN_S // STEP_S + 1)]


def two_hosts(tmp_path: Path) -> Config:
    hosts = tuple(HostConfig(name=name, ssh="local", server_log=str(tmp_path / f"{name}.log")) for name in "ab")
    return Config(server=ServerConfig(data_dir=str(tmp_path), database="kvwatch.db"), hosts=hosts)


def test_one_line_in_the_future_does_not_blind_its_host(tmp_path: Path) -> None:
    now = time.time()
    good = saturated(now)
    (tmp_path / "a.log").write_text("".join(good))
    outliers = [line(local_stamp(now + 3600), 1, 0.11), line("0001-01-01 00:00:00", 2, 0.11)]
    late_9999 = line("9999-12-31 23:59:59", 3, 0.11)
    (tmp_path / "b.log").write_text("".join(outliers + good[:50] + [late_9999] + good[50:]))
    config = two_hosts(tmp_path)
    services = build_services(config)
    try:
        services.start_collectors()
        store = services.store
        wait_until(lambda: all(len(store.series(h, "token_usage")[0]) >= len(good) for h in "ab"), timeout=30)
        for host in "ab":
            t, v = store.series(host, "token_usage")
            assert len(t) == len(good) and set(v.tolist()) == {0.97}
            assert now - SPAN_S - 2 <= t[0] and t[-1] <= now + 2  # the charts' range: the real lines'
        # each line out of line had the host's clock read first (it had not stepped)
        stamps = services.collectors["b"].sink.live.stamps
        wait_until(lambda: not stamps.suspect and stamps.counts.future == 2, timeout=30)
        assert stamps.counts.clock_checks == 2
        engine = AlertEngine(store, config.hosts, {h.name: rules_for_host(config, h) for h in config.hosts},
                             health=lambda name: services.collectors[name].health)
        engine.evaluate()
        states = {(a["host"], a["rule"]): a["state"] for a in engine.snapshot(retention_s=float("inf"))}
        assert states.get(("a", "token_usage_high")) in ("pending", "firing")
        assert states.get(("b", "token_usage_high")) == states[("a", "token_usage_high")]
        assert states.get(("b", "server_log_stale"), "inactive") == "inactive"
        with TestClient(create_app(services, manage_collectors=False)) as client:
            hosts = {h["name"]: h for h in client.get("/api/hosts").json()}
            exposition = client.get("/metrics").text
        assert hosts["a"]["stamps"]["future"] == 0 and hosts["a"]["stamps"]["past"] == 0
        assert (hosts["b"]["stamps"]["future"], hosts["b"]["stamps"]["past"]) == (2, 1)
        assert hosts["b"]["stamps"]["last"]["line"] == 53 and hosts["b"]["stamps"]["last"]["reason"] == "future"
        assert hosts["b"]["stamps"]["last"]["t"].startswith("9999-12-31")
        usage = [row for row in exposition.splitlines() if row.startswith("kvwatch_token_usage{")]
        assert usage and all(row.endswith(" 0.97") for row in usage), usage
    finally:
        services.stop()


def test_the_watermark_moves_only_through_accepted_stamps() -> None:
    guard, now = StampGuard(), 1_800_000_000.0
    key = ("server_log", "/log")

    def check(t: float) -> str | None:
        return guard.verdict(key, t, now)

    assert check(now - 600) is None and guard.watermark(*key) == now - 600
    assert check(now + 3600) == "future" and guard.watermark(*key) == now - 600  # one outlier: no move
    assert check(now - 10 * 3600) == "past"  # far behind the watermark and the clock
    assert check(now - 630) == "late"  # small disorder: stored, counted
    # A log that creeps ahead of the clock (a sped-up simulated run) is followed line by line...
    for i in range(1, 131):
        assert check(now + 60 * i) is None
    # ... and live lines behind a watermark that ran ahead re-anchor it.
    assert check(now - 2 * 3600) == "past" and check(now) is None and guard.watermark(*key) == now
    samples = [Sample("token_usage", "", 253402300799.0, 0.11)]
    with pytest.raises(ClockStepSuspected):
        guard.filter("server_log", "/log", 7, samples, [], read_at=now, now=now)
    guard.clock_checked()  # the host's clock was read again: it had not stepped
    kept, events = guard.filter("server_log", "/log", 7, samples, [], read_at=now, now=now)
    assert kept == [] and events == [] and guard.as_dict()["future"] == 1
