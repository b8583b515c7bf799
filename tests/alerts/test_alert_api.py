"""GET /api/alerts and the SSE `alert` events through a real uvicorn, and the whole chain from a
log file on disk through the real pipeline to a firing alert and a webhook message."""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kvwatch.app.alerts import start_alerting
from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.pipeline.heartbeat import HEALTH_KIND
from kvwatch.app.runner import build_services
from kvwatch.app.services import Services
from kvwatch.app.store.base import Batch, EventRow, Sample, Store
from kvwatch.app.store.sqlite import SqliteStore
from tests.alerts.recorded import T0, every
from tests.alerts.test_alert_webhook import Receiver

CONTRACT = {"rule": str, "host": str, "state": str, "since": float, "value": float}


def services_for(tmp_path: Path, webhook: str | None = None, server_log: str = "/logs/sglang.log") -> Services:
    host = HostConfig(name="gpu1", ssh="local", server_log=server_log)
    server = ServerConfig(data_dir=str(tmp_path), webhook=webhook)
    return Services(Config(server=server, hosts=(host,)), SqliteStore(str(tmp_path / "kvwatch.db")))


def saturate(store: Store, start: float = T0) -> None:
    points = every(start, [0.97] * 40)
    store.commit(Batch("gpu1", "server_log", "/l", samples=[Sample("token_usage", "", t, v) for t, v in points]))


def wait_for(check: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout} s")


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    running = services_for(tmp_path)
    yield running
    running.stop()


def test_get_alerts_follows_the_contract(services: Services, serve_app: Any) -> None:
    server = serve_app(create_app(services, manage_collectors=False))
    services.alerts = start_alerting(services, interval=0.2)
    saturate(services.store)
    url = f"{server.url}/api/alerts"
    alerts = wait_for(lambda: [a for a in httpx.get(url).json() if a["state"] == "firing"])
    alert = alerts[0]
    for key, kind in CONTRACT.items():
        assert isinstance(alert[key], kind), key
    assert (alert["rule"], alert["host"], alert["since"]) == ("token_usage_high", "gpu1", T0 + 120)
    assert alert["value"] == pytest.approx(0.97)
    assert alert["summary"].startswith("gpu1: KV token usage high (97.0%)")
    assert alert["link"].startswith(f"/?host=gpu1&from={int(T0 - 300)}&to=")
    assert httpx.get(url, params={"host": "gpu1"}).json()[0]["rule"] == "token_usage_high"
    missing = httpx.get(url, params={"host": "nope"})
    assert missing.status_code == 404
    assert "nope" in missing.json()["detail"]


def test_get_alerts_from_the_store_when_alerting_is_not_running(services: Services, serve_app: Any) -> None:
    alerting = start_alerting(services, interval=0.2)
    saturate(services.store)
    wait_for(lambda: any(a["state"] == "firing" for a in alerting.engine.snapshot()))
    alerting.stop()
    server = serve_app(create_app(services, manage_collectors=False))
    alerts = httpx.get(f"{server.url}/api/alerts").json()
    assert [(a["rule"], a["state"], a["since"]) for a in alerts] == [("token_usage_high", "firing", T0 + 120)]


def test_state_changes_arrive_as_sse_alert_events(services: Services, serve_app: Any) -> None:
    server = serve_app(create_app(services, manage_collectors=False))
    services.alerts = start_alerting(services, interval=0.2)
    states: list[str] = []
    with httpx.stream("GET", f"{server.url}/api/stream", timeout=15) as response:
        lines = response.iter_lines()
        assert next(lines) == "event: hello"
        saturate(services.store)
        event = None
        for line in lines:
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: ") and event == "alert":
                data = json.loads(line.removeprefix("data: "))
                if data["rule"] == "token_usage_high":
                    states.append(data["state"])
                    if data["state"] == "firing":
                        break
    assert states == ["pending", "firing"]


def decode_line(t: float, usage: float, queue: int) -> str:
    stamp = dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    return (
        f"[{stamp} TP0] Decode batch, #running-req: 72, #token: 153179, token usage: {usage:.2f}, "
        f"cuda graph: True, gen throughput (token/s): 930.63, #queue-req: {queue}\n"
    )


def test_a_saturating_log_on_disk_fires_through_the_real_pipeline(
    tmp_path: Path, serve_app: Any, receiver: Receiver
) -> None:
    log = tmp_path / "sglang.log"
    log.write_text("".join(decode_line(T0 + 5 * i, 0.6, 0) for i in range(10)))
    host = HostConfig(name="gpu1", ssh="local", server_log=str(log))
    config = Config(server=ServerConfig(data_dir=str(tmp_path), webhook=receiver.url), hosts=(host,))
    services = build_services(config)
    server = serve_app(create_app(services))  # the app's lifespan starts collectors and alerting
    assert services.alerts is not None
    with log.open("a") as handle:  # the server saturates: 3 min of log time written at once
        handle.write("".join(decode_line(T0 + 50 + 5 * i, 0.97, 10 + i) for i in range(36)))
    url = f"{server.url}/api/alerts"
    firing = wait_for(lambda: [a for a in httpx.get(url).json() if a["state"] == "firing"])
    assert "token_usage_high" in {a["rule"] for a in firing}
    sent = wait_for(lambda: [b for b in list(receiver.accepted) if b["alert"]["rule"] == "token_usage_high"])
    assert [b["status"] for b in sent] == ["firing"]
    assert sent[0]["alert"]["since"] == T0 + 50 + 120
    assert sent[0]["alert"]["link"].startswith(f"http://127.0.0.1:8765/?host=gpu1&from={int(T0 + 50 - 300)}")
    assert "|chart>" in sent[0]["text"]
    server.stop()
    assert services.alerts is None  # stopped with the app, before the store closed


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.close()


def test_a_web_only_app_alerts_on_health_its_collector_process_stored(services: Services) -> None:
    # `serve --no-collect`: no collector in this process; the other process's heartbeat document
    # says the host's key was rejected.
    health = {"state": "failed", "last_error": "host key rejected: gpu1 changed", "since": time.time(), "owner": "x:1"}
    services.store.put_document(HEALTH_KIND, "gpu1", "gpu1", time.time(), health)
    alerting = services.alerts = start_alerting(services, interval=0.2)
    alert = wait_for(lambda: [a for a in alerting.engine.snapshot() if a["rule"] == "host_key_changed"])[0]
    assert (alert["state"], alert["severity"]) == ("firing", "page")
    assert "host key rejected" in alert["summary"]


def test_a_controller_restart_inside_muting_sends_one_resolved_then_rearms(tmp_path: Path, receiver: Receiver) -> None:
    services = services_for(tmp_path, webhook=receiver.url)
    alerting = services.alerts = start_alerting(services, interval=0.1)
    try:
        saturate(services.store)
        wait_for(lambda: receiver.states() == ["firing"])
        with alerting.muting("gpu1"):
            assert alerting.muted("gpu1") is not None
            # What a restart logs: a crash, then an idle new server. None of it may alert.
            services.store.commit(
                Batch("gpu1", "server_log", "/l", events=[EventRow("event", T0 + 205, 1, {"event": "crash"})])
            )
            services.store.commit(
                Batch(
                    "gpu1", "server_log", "/l", samples=[Sample("token_usage", "", T0 + 210 + i, 0.0) for i in range(5)]
                )
            )
            time.sleep(0.5)
        assert alerting.muted("gpu1") is None
        sent = wait_for(lambda: receiver.accepted[1:])
        assert [b["status"] for b in receiver.accepted] == ["firing", "resolved"]
        assert "re-armed after controller restart" in sent[0]["text"]
        saturate(services.store, start=T0 + 300)  # the new run saturates too: a new alert, after `for`
        wait_for(lambda: receiver.states() == ["firing", "resolved", "firing"])
        assert receiver.accepted[2]["alert"]["since"] == T0 + 300 + 120
        assert all(b["alert"]["rule"] == "token_usage_high" for b in receiver.accepted)
    finally:
        services.stop()


def test_following_the_controllers_busy_flag_mutes_and_re_arms(tmp_path: Path, receiver: Receiver) -> None:
    services = services_for(tmp_path, webhook=receiver.url)
    restarting: set[str] = set()
    alerting = services.alerts = start_alerting(services, interval=0.1)
    alerting.follow_restarts(lambda host: host in restarting)
    try:
        saturate(services.store)
        wait_for(lambda: receiver.states() == ["firing"])
        restarting.add("gpu1")  # HostController.busy turns true
        wait_for(lambda: alerting.muted("gpu1") is not None)
        services.store.commit(
            Batch("gpu1", "server_log", "/l", events=[EventRow("event", T0 + 205, 1, {"event": "oom"})])
        )
        time.sleep(0.5)
        assert receiver.states() == ["firing"]
        restarting.discard("gpu1")  # the new server is up
        wait_for(lambda: receiver.states() == ["firing", "resolved"])
        assert alerting.muted("gpu1") is None
        assert "re-armed after controller restart" in receiver.accepted[1]["text"]
        time.sleep(0.5)
        assert [a["rule"] for a in alerting.engine.snapshot() if a["state"] == "firing"] == []
    finally:
        services.stop()


def test_the_app_mutes_a_host_its_controller_is_restarting(tmp_path: Path, serve_app: Any) -> None:
    class Controller:  # what the app reads of app.state.controllers: HostController.busy
        busy = False

    services = services_for(tmp_path)
    app = create_app(services)
    app.state.controllers = {"gpu1": Controller()}
    serve_app(app)
    alerting = services.alerts
    assert alerting is not None
    Controller.busy = True
    wait_for(lambda: alerting.muted("gpu1") is not None)
    Controller.busy = False
    wait_for(lambda: alerting.muted("gpu1") is None)
