"""The fleet kept live on the server (app/api/fleet_live.py) over a real SQLite store and the app's bus:
one `fleet` event a tick with only what changed, now-row numbers from the hosts' samples, whole rows
read again on a host's news; and a stream that carries one host's samples when asked."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from kvwatch.app.api.fleet import fleet_answer
from kvwatch.app.api.fleet_live import FleetKeeper
from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.services import Services
from kvwatch.app.store import open_store
from tests.api.test_fleet import fill
from tests.app.slice_helpers import wait_until
from tests.app.test_stream_resume import read_events

HOSTS = ("gpu1", "gpu2", "gpu3")


def fleet_services(tmp_path: Path) -> Services:
    hosts = tuple(HostConfig(name=name, ssh="local", server_log=str(tmp_path / f"{name}.log"),
                             target_completions=1000) for name in HOSTS)
    services = Services(Config(server=ServerConfig(data_dir=str(tmp_path)), hosts=hosts),
                        open_store(str(tmp_path / "kvwatch.db")))
    start = time.time() - 60
    for index, name in enumerate(HOSTS):
        fill(services, name, start, 900.0 + 100 * index, 300, 0.85)
    return services


def published(services: Services) -> list[dict[str, Any]]:
    heard: list[dict[str, Any]] = []
    services.bus.add_listener(lambda event, data: heard.append(data) if event == "fleet" else None)
    return heard


def test_the_first_tick_sends_every_row_and_the_answer_s_totals(tmp_path: Path) -> None:
    services = fleet_services(tmp_path)
    heard = published(services)
    keeper = FleetKeeper(services)
    now = time.time()
    change = keeper.tick(now)
    answer = fleet_answer(services)
    assert change is not None and heard == [change]
    assert [row["host"] for row in change["rows"]] == change["order"] == [r["host"] for r in answer["hosts"]]
    first = {row["host"]: row for row in change["rows"]}
    for row in answer["hosts"]:
        for key in ("gen_throughput", "token_usage", "completions", "eta_s", "verdict", "run", "config_diff"):
            assert first[row["host"]][key] == row[key], key
        assert "sources" not in first[row["host"]] and "sources_at" in first[row["host"]]
    assert change["totals"] == answer["totals"]
    assert keeper.tick(now + 1) is None  # nothing new: no event at all
    services.store.close()


def test_a_sample_changes_only_its_host_and_the_totals(tmp_path: Path) -> None:
    services = fleet_services(tmp_path)
    keeper = FleetKeeper(services)
    services.bus.add_listener(keeper.note)
    now = time.time()
    before = keeper.tick(now)
    assert before is not None
    total = before["totals"]["gen_throughput"]
    services.bus.publish("sample", {"host": "gpu2", "points": {"gen_throughput": [[now, 1.0], [now + 0.5, 1234.5]],
                                                               "gpu_util": [[now, 0.5]]}})
    change = keeper.tick(now + 1)
    assert change is not None
    assert change["rows"] == [{"host": "gpu2", "gen_throughput": 1234.5, "fresh_at": now + 0.5}]
    assert "order" not in change  # nobody moved
    old = next(r for r in before["rows"] if r["host"] == "gpu2")["gen_throughput"]
    assert change["totals"]["gen_throughput"] == total - old + 1234.5
    services.store.close()


def test_news_of_a_host_reads_its_whole_row_again_at_the_next_tick(tmp_path: Path) -> None:
    services = fleet_services(tmp_path)
    keeper = FleetKeeper(services, full_every=3600.0)  # only news makes a row be read again here
    services.bus.add_listener(keeper.note)
    now = time.time()
    keeper.tick(now)
    fill(services, "gpu3", now - 30, 500.0, 900, 0.95)  # a new run with another config, stored directly
    assert keeper.tick(now + 1) is None  # not told: the keeper does not read the store on its own
    services.bus.publish("run", {"host": "gpu3", "state": "started"})
    change = keeper.tick(now + 2)
    assert change is not None
    row = next(r for r in change["rows"] if r["host"] == "gpu3")
    assert row["completions"] == 900.0 and row["config_diff"] == {"mem-fraction-static": 0.95}
    services.store.close()


def test_alert_news_sends_the_host_s_whole_row_even_when_nothing_in_it_changed(tmp_path: Path) -> None:
    """The page moves a row on the stream's `alert` event itself; an alert that fired and cleared before
    the keeper read the row again leaves the row as it was sent, and the page must be told so."""
    services = fleet_services(tmp_path)
    keeper = FleetKeeper(services, full_every=3600.0)
    services.bus.add_listener(keeper.note)
    now = time.time()
    first = keeper.tick(now)
    assert first is not None
    services.bus.publish("alert", {"host": "gpu2", "rule": "token_usage_high", "state": "resolved"})
    change = keeper.tick(now + 1)
    assert change is not None and [r["host"] for r in change["rows"]] == ["gpu2"]
    sent = next(r for r in first["rows"] if r["host"] == "gpu2")
    assert change["rows"][0]["attention"] == sent["attention"] and change["rows"][0]["alerts"] == []
    assert set(change["rows"][0]) == set(sent) | {"host"}  # whole, not only what changed
    services.bus.publish("run", {"host": "gpu2", "state": "started"})  # other news: only what changed
    assert keeper.tick(now + 2) is None
    services.store.close()


def test_rows_are_read_again_a_share_of_the_fleet_each_tick(tmp_path: Path) -> None:
    services = fleet_services(tmp_path)
    keeper = FleetKeeper(services, full_every=3.0)  # 3 hosts over 3 s: one host's row a tick
    now = time.time()
    keeper.tick(now)
    read: list[str] = []
    original = keeper._cache.verdict

    def counted(services: Services, host: HostConfig, run_id: str | None, at: float) -> str | None:
        read.append(host.name)
        return original(services, host, run_id, at)

    keeper._cache.verdict = counted  # type: ignore[method-assign]
    for second in range(1, 7):
        keeper.tick(now + 2 + second)
    assert sorted(read) == sorted(HOSTS * 2)
    services.store.close()


class Listening:
    """A served app over `services` and one stream reader (`samples_of` a host) collecting `want` events."""

    def __init__(self, services: Services, serve_app: Any, samples_of: str, want: int) -> None:
        self.services = services
        self.server = serve_app(create_app(services, manage_collectors=False))
        self.frames: list[dict[str, Any]] = []
        url = f"{self.server.url}/api/stream?samples_of={samples_of}"
        self.reader = threading.Thread(target=read_events, args=(url, {}, want, self.frames), daemon=True)
        self.reader.start()
        wait_until(lambda: services.bus.listened)

    def events(self, *names: str) -> list[tuple[str, dict[str, Any]]]:
        self.reader.join(10)
        return [(f["event"], json.loads(f["data"])) for f in self.frames if f["event"] in names]

    def close(self) -> None:
        self.server.stop()  # before the store closes: the fleet keeper reads it
        self.services.store.close()


def test_the_stream_carries_one_host_s_samples_when_asked(tmp_path: Path, serve_app: Any) -> None:
    services = fleet_services(tmp_path)
    listening = Listening(services, serve_app, "gpu2", 3)
    for host in HOSTS:
        services.bus.publish("sample", {"host": host, "points": {"running_req": [[1.0, 1.0]]}})
    services.bus.publish("alert", {"host": "gpu3", "rule": "token_usage_high", "state": "firing"})
    services.bus.publish("sample", {"host": "gpu2", "points": {"running_req": [[2.0, 2.0]]}})
    heard = [(event, data.get("host")) for event, data in listening.events("sample", "alert")]
    assert heard == [("sample", "gpu2"), ("alert", "gpu3"), ("sample", "gpu2")]
    listening.close()


def test_the_app_publishes_fleet_events_while_a_page_listens(tmp_path: Path, serve_app: Any) -> None:
    services = fleet_services(tmp_path)
    listening = Listening(services, serve_app, "gpu1", 2)
    first_seen = time.monotonic()
    wait_until(lambda: any(f["event"] == "fleet" for f in listening.frames), timeout=5)
    now = time.time()
    services.bus.publish("sample", {"host": "gpu3", "points": {"queue_req": [[now, 77.0]]}})
    fleet = [data for _, data in listening.events("fleet")]
    assert {row["host"] for row in fleet[0]["rows"]} == set(HOSTS)
    assert fleet[1]["rows"] == [{"host": "gpu3", "queue_req": 77.0, "fresh_at": now}]
    assert time.monotonic() - first_seen < 5
    listening.close()
