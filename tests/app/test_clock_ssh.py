"""One clock over a real OpenSSH server whose sessions run in `TZ=Asia/Shanghai` (UTC+8, kvwatch in
UTC): every stored sample sits at the UTC instant it happened, for the catch-up and for live lines,
and /api/hosts shows the offset, the zone, the clock skew and how each source's zone was found.

A `date` shim on the sessions' PATH adds `skew` seconds (a file next to sshd) to the host's clock,
so a host whose clock runs ahead of kvwatch's can be played; the file stamps and mtimes such a host
would write are played by the test (naive UTC+8 stamps of the skewed clock, mtimes set with utime).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.pipeline.batches import CATCHUP_EVENT
from kvwatch.app.runner import build_services
from kvwatch.app.services import Services
from tests.app.slice_helpers import wait_until
from tests.fixtures.sshd import SSHD, Sshd, own_sshd, require_component

pytestmark = pytest.mark.sshd
UTC8 = dt.timezone(dt.timedelta(hours=8))
DECODE = ("[{stamp} TP0] Decode batch, #running-req: {n}, #token: 1000, token usage: 0.50, cuda graph: True, "
          "gen throughput (token/s): 900.00, #queue-req: 0\n")
DATE_SHIM = """#!/bin/sh
skew=$(cat {skew} 2>/dev/null || echo 0)
now=$(/bin/date +%s.%N)
exec /bin/date -d "@$(( ${{now%.*}} + skew )).${{now#*.}}" "$@"
"""


@pytest.fixture(scope="module")
def shanghai() -> Iterator[Sshd]:
    require_component("OpenSSH server (/usr/sbin/sshd)", os.path.exists(SSHD))
    d = Path(tempfile.mkdtemp(prefix="kvwatch-sshd-tz-"))
    with own_sshd(d, env={"TZ": "Asia/Shanghai"}) as server:
        shim = server.bin_dir / "date"
        shim.write_text(DATE_SHIM.format(skew=d / "skew"))
        shim.chmod(0o755)
        yield server


def set_skew(server: Sshd, seconds: int) -> None:
    (server.dir / "skew").write_text(f"{seconds}\n")


def host_config(tmp: Path, server: Sshd, timezone: str | None = None) -> Config:
    host = HostConfig(name="gpu1", ssh=server.spec, identity_file=server.key_path,
                      known_hosts=server.known_hosts_path, server_log=str(tmp / "server.log"),
                      outputs=(str(tmp / "prepared" / "*" / "raw_responses.jsonl"),), timezone=timezone)
    return Config(server=ServerConfig(data_dir=str(tmp)), hosts=(host,))


def write_decodes(log: Path, instants: list[float], first: int, zone: dt.tzinfo, ahead_s: float = 0.0) -> None:
    """Decode lines as a process in `zone` whose clock is `ahead_s` fast logs them at `instants`."""
    with log.open("a") as handle:
        for i, t in enumerate(instants):
            stamp = dt.datetime.fromtimestamp(t + ahead_s, zone).strftime("%Y-%m-%d %H:%M:%S")
            handle.write(DECODE.format(stamp=stamp, n=first + i))


def write_outputs(tmp: Path, count: int) -> Path:
    path = tmp / "prepared" / "a" / "raw_responses.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        handle.writelines(f'{{"id": {n}}}\n' for n in range(count))
    return path


def stored(services: Services, metric: str) -> list[tuple[float, float]]:
    t, v = services.store.series("gpu1", metric)
    return list(zip(t.tolist(), v.tolist(), strict=True))


def started(services: Services) -> Services:
    services.collectors["gpu1"].interval = 0.05
    services.start_collectors()
    return services


def served(services: Services, serve_app: Any) -> str:
    """The app's lifespan starts the collectors; the URL it serves on."""
    services.collectors["gpu1"].interval = 0.05
    return str(serve_app(create_app(services)).url)


def test_catch_up_and_live_lines_of_a_utc_plus_8_host_sit_at_their_utc_instants(
    tmp_path: Path, shanghai: Sshd, serve_app: Any
) -> None:
    set_skew(shanghai, 0)
    now = float(int(time.time()))
    history = [now - 300 + 10 * i for i in range(30)]  # the last line 10 s ago
    log = tmp_path / "server.log"
    write_decodes(log, history, 1, UTC8)
    os.utime(log, (history[-1], history[-1]))
    outputs = write_outputs(tmp_path, 50)
    os.utime(outputs, (now - 120, now - 120))  # the client wrote its last output 2 min ago

    services = build_services(host_config(tmp_path, shanghai))
    url = served(services, serve_app)
    wait_until(lambda: len(stored(services, "running_req")) == 30, timeout=30)
    assert stored(services, "running_req") == [(t, float(i + 1)) for i, t in enumerate(history)]
    wait_until(lambda: bool(stored(services, "completions")), timeout=30)
    assert stored(services, "completions") == [(now - 120, 50.0)]  # at mtime, not at reading

    live = [time.time() - 0.5 + 0.1 * i for i in range(5)]
    write_decodes(log, [float(int(t)) for t in live], 31, UTC8)
    write_outputs(tmp_path, 10)
    appended_at = time.time()
    wait_until(lambda: len(stored(services, "running_req")) == 35, timeout=30)
    assert [t for t, _ in stored(services, "running_req")[30:]] == [float(int(t)) for t in live]
    wait_until(lambda: len(stored(services, "completions")) == 2, timeout=30)
    t_live, count = stored(services, "completions")[1]
    assert count == 60.0 and appended_at - 0.5 <= t_live <= time.time()

    hosts = httpx.get(f"{url}/api/hosts").json()
    host = hosts[0]
    assert (host["utc_offset_s"], host["timezone"], host["timezone_from"]) == (28800, "Asia/Shanghai", "detected")
    assert abs(host["clock_skew_s"]) < 1.0 and host["clock_skew_corrected"] is False
    server_log = host["sources"]["server_log"]["clock"]
    assert server_log["utc_offset_s"] == 28800 and server_log["offset_from"] == "detected"
    assert server_log["detected_by"] == "file mtime"
    catch_ups = services.store.events("gpu1", kinds=(CATCHUP_EVENT,))
    by_source = {e["source"]: e for e in catch_ups}
    assert set(by_source) == {"server_log", "outputs"}
    assert by_source["outputs"]["t"] == now - 120 and by_source["outputs"]["from_offset"] == 0


def test_a_container_logging_in_utc_on_the_utc_plus_8_host(tmp_path: Path, shanghai: Sshd) -> None:
    """The login shell says UTC+8, the file (stamps vs mtime) says UTC: the file's writer wins."""
    set_skew(shanghai, 0)
    now = float(int(time.time()))
    history = [now - 60 + 10 * i for i in range(6)]
    log = tmp_path / "server.log"
    write_decodes(log, history, 1, dt.UTC)
    os.utime(log, (history[-1] + 1, history[-1] + 1))
    services = started(build_services(host_config(tmp_path, shanghai)))
    try:
        wait_until(lambda: len(stored(services, "running_req")) == 6, timeout=30)
        assert [t for t, _ in stored(services, "running_req")] == history
        health = services.collectors["gpu1"].health.as_dict()
        assert health["utc_offset_s"] == 28800
        assert health["sources"]["server_log"]["clock"]["utc_offset_s"] == 0
    finally:
        services.stop()


def test_a_host_clock_an_hour_ahead_is_measured_and_taken_off(tmp_path: Path, shanghai: Sshd) -> None:
    set_skew(shanghai, 3600)
    now = time.time()
    history = [float(int(now)) - 50 + 10 * i for i in range(5)]
    log = tmp_path / "server.log"
    write_decodes(log, history, 1, UTC8, ahead_s=3600)  # the host's clock says one hour later
    os.utime(log, (history[-1] + 3600, history[-1] + 3600))
    outputs = write_outputs(tmp_path, 7)
    os.utime(outputs, (history[-1] + 3600, history[-1] + 3600))
    services = started(build_services(host_config(tmp_path, shanghai)))
    try:
        wait_until(lambda: len(stored(services, "running_req")) == 5, timeout=30)
        health = services.collectors["gpu1"].health.as_dict()
        assert health["clock_skew_s"] == pytest.approx(3600, abs=0.5) and health["clock_skew_corrected"]
        assert [t for t, _ in stored(services, "running_req")] == pytest.approx(history, abs=0.5)
        wait_until(lambda: bool(stored(services, "completions")), timeout=30)
        assert stored(services, "completions")[0][0] == pytest.approx(history[-1], abs=0.5)
    finally:
        set_skew(shanghai, 0)
        services.stop()


def test_a_named_zone_follows_a_dst_change_inside_the_log(tmp_path: Path, shanghai: Sshd, serve_app: Any) -> None:
    """`timezone = "America/New_York"`: a log across the 2026-11-01 fall-back (01:xx logged twice)
    is stored 10 minutes apart throughout, although the host's shell says UTC+8."""
    set_skew(shanghai, 0)
    ny = dt.timezone(dt.timedelta(hours=-4))
    start = dt.datetime(2026, 11, 1, 0, 0, tzinfo=ny).timestamp()  # 00:00 EDT
    instants = [start + 600 * i for i in range(24)]
    log = tmp_path / "server.log"
    with log.open("w") as handle:
        for i, t in enumerate(instants):  # what a New York process writes: wall clock, no zone
            local = dt.datetime.fromtimestamp(t, dt.UTC).astimezone(_zone("America/New_York"))
            handle.write(DECODE.format(stamp=local.strftime("%Y-%m-%d %H:%M:%S"), n=i + 1))
    assert log.read_text().count(" 01:00:00 TP0") == 2
    services = build_services(host_config(tmp_path, shanghai, timezone="America/New_York"))
    url = served(services, serve_app)
    wait_until(lambda: len(stored(services, "running_req")) == 24, timeout=30)
    assert [t for t, _ in stored(services, "running_req")] == instants
    host = httpx.get(f"{url}/api/hosts").json()[0]
    assert (host["timezone"], host["timezone_from"]) == ("America/New_York", "config")
    assert host["detected_timezone"] == "Asia/Shanghai" and host["detected_utc_offset_s"] == 28800
    assert host["sources"]["server_log"]["clock"]["offset_from"] == "config"


def test_a_container_known_only_by_its_offset_follows_a_dst_step_in_its_live_lines(
    tmp_path: Path, shanghai: Sshd, serve_app: Any
) -> None:
    """A container on the UTC+8 host logs in New York time, and nothing names its zone: the catch-up
    finds UTC-5 from the file (newest stamp against mtime). Its clock then springs forward: the live
    lines, stamped an hour later on the wall, still sit at the instants they were written."""
    set_skew(shanghai, 0)
    est, edt = dt.timezone(dt.timedelta(hours=-5)), dt.timezone(dt.timedelta(hours=-4))
    now = float(int(time.time()))
    history = [now - 60 + 10 * i for i in range(6)]
    log = tmp_path / "server.log"
    write_decodes(log, history, 1, est)
    os.utime(log, (history[-1] + 1, history[-1] + 1))
    services = build_services(host_config(tmp_path, shanghai))
    url = served(services, serve_app)
    wait_until(lambda: len(stored(services, "running_req")) == 6, timeout=30)
    clock = httpx.get(f"{url}/api/hosts").json()[0]["sources"]["server_log"]["clock"]
    assert (clock["utc_offset_s"], clock["timezone"], clock["detected_by"]) == (-18000, None, "file mtime")

    before = [float(int(time.time()))]
    write_decodes(log, before, 7, est)
    wait_until(lambda: len(stored(services, "running_req")) == 7, timeout=30)
    after = [float(int(time.time())) + 1 + i for i in range(3)]
    while time.time() < after[-1]:
        time.sleep(0.05)
    write_decodes(log, after, 8, edt)  # the writer's wall clock jumped an hour ahead
    wait_until(lambda: len(stored(services, "running_req")) == 10, timeout=30)
    assert [t for t, _ in stored(services, "running_req")] == history + before + after
    clock = httpx.get(f"{url}/api/hosts").json()[0]["sources"]["server_log"]["clock"]
    assert clock["utc_offset_s"] == -14400
    assert [(s["from_utc_offset_s"], s["to_utc_offset_s"], s["at"]) for s in clock["offset_steps"]] == [
        (-18000, -14400, after[0])]


def _zone(name: str) -> dt.tzinfo:
    from zoneinfo import ZoneInfo

    return ZoneInfo(name)


FAKE_NVIDIA_SMI = """#!/bin/sh
# nvidia-smi's query loop as it prints on the host: a naive stamp of the host's local time
while true; do
  echo "$(date '+%Y/%m/%d %H:%M:%S.%3N'), 0, 97, 39287, 81559, 687.74, 61"
  sleep 0.2
done
"""


def test_nvidia_smi_stamps_in_the_hosts_zone_sit_at_now(tmp_path: Path, shanghai: Sshd) -> None:
    set_skew(shanghai, 0)
    fake = shanghai.bin_dir / "nvidia-smi"
    fake.write_text(FAKE_NVIDIA_SMI)
    fake.chmod(0o755)
    (tmp_path / "server.log").write_text("")
    config = host_config(tmp_path, shanghai)
    config = Config(server=config.server, hosts=(config.hosts[0].model_copy(update={"gpu": True}),))
    started_at = time.time()
    services = started(build_services(config))
    try:
        wait_until(lambda: len(stored(services, "gpu_util_pct")) >= 3, timeout=30)
        times = [t for t, _ in stored(services, "gpu_util_pct")]
        assert all(started_at - 1 <= t <= time.time() for t in times), [t - started_at for t in times]
    finally:
        services.stop()
        fake.unlink()


def test_skew_that_appears_during_a_connection_is_measured_again_and_taken_off(
    tmp_path: Path, shanghai: Sshd
) -> None:
    set_skew(shanghai, 0)
    log = tmp_path / "server.log"
    log.write_text("")
    services = build_services(host_config(tmp_path, shanghai))
    follower = services.collectors["gpu1"]
    follower.options = dataclasses.replace(follower.options, clock_interval=0.3)
    started(services)
    try:
        wait_until(lambda: follower.health.clock.get("clock_skew_s") is not None, timeout=30)
        set_skew(shanghai, -1800)  # the host's clock is stepped back half an hour
        wait_until(lambda: follower.health.clock["clock_skew_s"] < -1790, timeout=30)
        now = float(int(time.time()))
        write_decodes(log, [now], 1, UTC8, ahead_s=-1800)
        wait_until(lambda: len(stored(services, "running_req")) == 1, timeout=30)
        assert stored(services, "running_req")[0][0] == pytest.approx(now, abs=0.5)
        source = follower.health.as_dict()["sources"]["server_log"]["clock"]
        assert source["skew_corrected_s"] == pytest.approx(-1800, abs=0.5)
    finally:
        set_skew(shanghai, 0)
        services.stop()


def test_client_progress_lines_sit_when_they_appeared_and_the_backlog_is_marked(
    tmp_path: Path, shanghai: Sshd
) -> None:
    """tqdm lines carry no stamp: the backlog found at connect sits at the file's mtime (written
    while kvwatch was away), lines appended later at the time they are read."""
    set_skew(shanghai, 0)
    (tmp_path / "server.log").write_text("")
    client_log = tmp_path / "client.log"
    client_log.write_text("".join(f" {n}%|#     | {n}/100 [00:10<00:20,  2.00it/s]\n" for n in range(1, 21)))
    backlog_bytes = client_log.stat().st_size
    written_at = float(int(time.time())) - 900  # the client's last line, 15 min before kvwatch came back
    os.utime(client_log, (written_at, written_at))
    config = host_config(tmp_path, shanghai)
    config = Config(server=config.server, hosts=(config.hosts[0].model_copy(update={"client_log": str(client_log)}),))
    services = started(build_services(config))
    try:
        wait_until(lambda: len(stored(services, "client_done")) == 20, timeout=30)
        assert {t for t, _ in stored(services, "client_done")} == {written_at}
        with client_log.open("a") as handle:
            handle.write(" 21%|#     | 21/100 [00:10<00:20,  2.00it/s]\n")
        appended_at = time.time()
        wait_until(lambda: len(stored(services, "client_done")) == 21, timeout=30)
        assert appended_at - 0.5 <= stored(services, "client_done")[-1][0] <= time.time()
        marks = services.store.events("gpu1", kinds=(CATCHUP_EVENT,))
        assert [(m["source"], m["t"], m["to_offset"]) for m in marks] == [("client_log", written_at, backlog_bytes)]
    finally:
        services.stop()


def test_a_step_of_the_hosts_clock_loses_nothing_and_stores_nothing_early(tmp_path: Path, shanghai: Sshd) -> None:
    """NTP steps the host's clock 10 min ahead, later 10 min back (a VM resumed, then corrected): the
    first line out of line has the clock read again at once (not in 600 s), then every line is stored
    at the instant it happened."""
    set_skew(shanghai, 0)
    log = tmp_path / "server.log"
    log.touch()
    services = started(build_services(host_config(tmp_path, shanghai)))
    try:
        wait_until(lambda: services.collectors["gpu1"].health.as_dict()["clock"] == "read", timeout=30)
        instants: list[float] = []
        for step_s in (0, 600, 0):
            set_skew(shanghai, step_s)
            batch = [float(int(time.time())) - 8 + i for i in range(4)]
            write_decodes(log, batch, len(instants) + 1, UTC8, ahead_s=step_s)
            instants += batch
            count = len(instants)
            wait_until(lambda: len(stored(services, "running_req")) == count, timeout=30)  # noqa: B023
            time.sleep(1.0)
        at = {int(n): t for t, n in stored(services, "running_req")}  # line n logs running-req n
        assert [at[n] for n in range(1, len(instants) + 1)] == pytest.approx(instants, abs=1.0)
        stamps = services.collectors["gpu1"].sink.live.stamps.as_dict()
        assert (stamps["future"], stamps["past"], stamps["clock_checks"]) == (0, 0, 2)
    finally:
        set_skew(shanghai, 0)
        services.stop()
