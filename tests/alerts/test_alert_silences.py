"""Acknowledge and mute from the page: POST /api/alerts/{host}/{rule}/ack|mute|unmute through a real
uvicorn on a real SQLite store, the SSE `alert` events they cause, the webhook a mute holds back,
and a second web app on the same store following them."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kvwatch.app.alerts import alerts_view, start_alerting
from kvwatch.app.alerts.silences import SILENCE_DOC
from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.services import Services
from kvwatch.app.store.base import Batch, Sample
from kvwatch.app.store.sqlite import SqliteStore
from tests.alerts.recorded import T0, every
from tests.alerts.test_alert_api import saturate, wait_for
from tests.alerts.test_alert_webhook import Receiver

TOKEN = "alert-token-1234"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def make_services(tmp_path: Path, webhook: str | None = None) -> Services:
    host = HostConfig(name="gpu1", ssh="local", server_log="/logs/sglang.log")
    server = ServerConfig(data_dir=str(tmp_path), webhook=webhook, token=TOKEN)
    return Services(Config(server=server, hosts=(host,)), SqliteStore(str(tmp_path / "kvwatch.db")))


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.close()


@pytest.fixture
def running(
    tmp_path: Path, serve_app: Any, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Services, str]]:
    monkeypatch.delenv("KVWATCH_TOKEN", raising=False)
    services = make_services(tmp_path, webhook=receiver.url)
    server = serve_app(create_app(services, manage_collectors=False))
    services.alerts = start_alerting(services, interval=0.1)
    yield services, server.url
    server.stop()
    services.stop()


def firing(url: str) -> dict[str, Any]:
    alerts = wait_for(lambda: [a for a in httpx.get(f"{url}/api/alerts").json() if a["state"] == "firing"])
    return dict(alerts[0])


def test_every_action_needs_the_token_and_a_same_origin_request(running: tuple[Services, str]) -> None:
    services, url = running
    saturate(services.store)
    firing(url)
    for action in ("ack", "mute", "unmute"):
        target = f"{url}/api/alerts/gpu1/token_usage_high/{action}"
        assert httpx.post(target).status_code == 401
        assert httpx.post(target, headers={"Authorization": "Bearer wrong"}).status_code == 401
        cross = httpx.post(target, headers={**AUTH, "Origin": "http://evil.example"})
        assert cross.status_code == 403
    assert services.store.documents(SILENCE_DOC) == []  # nothing refused was written
    alert = firing(url)
    assert (alert["acknowledged"], alert["muted_until"]) == (False, None)


def test_acknowledge_is_stored_and_heard_by_every_tab(running: tuple[Services, str]) -> None:
    services, url = running
    missing = httpx.post(f"{url}/api/alerts/gpu1/no_such_rule/ack", headers=AUTH)
    assert missing.status_code == 404
    not_open = httpx.post(f"{url}/api/alerts/gpu1/token_usage_high/ack", headers=AUTH)
    assert not_open.status_code == 409  # nothing open to acknowledge yet
    saturate(services.store)
    alert = firing(url)
    assert alert["headline"] == "KV token usage high 0.97 ≥ 0.95"
    assert alert["threshold"] == 0.95
    with httpx.stream("GET", f"{url}/api/stream", timeout=15) as stream:
        lines = stream.iter_lines()
        assert next(lines) == "event: hello"
        answer = httpx.post(f"{url}/api/alerts/gpu1/token_usage_high/ack", headers=AUTH)
        assert answer.status_code == 200
        assert answer.json()["acknowledged"] is True
        heard = next(data for data in (json.loads(line[6:]) for line in lines if line.startswith("data: "))
                     if data.get("acknowledged"))
    assert (heard["rule"], heard["state"], heard["acknowledged"]) == ("token_usage_high", "firing", True)
    listed = httpx.get(f"{url}/api/alerts").json()[0]
    assert (listed["state"], listed["acknowledged"]) == ("firing", True)  # still listed, and quiet
    assert listed["acknowledged_at"] == pytest.approx(time.time(), abs=30)
    stored = services.store.documents(SILENCE_DOC)
    assert [d["data"]["acked_episode"] for d in stored] == [alert["active_at"]]


def test_a_muted_alert_sends_no_webhook_until_the_mute_ends(running: tuple[Services, str], receiver: Receiver) -> None:
    services, url = running
    answer = httpx.post(f"{url}/api/alerts/gpu1/token_usage_high/mute", headers=AUTH, json={"for_s": 3600})
    assert answer.status_code == 200
    until = answer.json()["muted_until"]
    assert until == pytest.approx(time.time() + 3600, abs=30)
    saturate(services.store)
    assert firing(url)["muted_until"] == until
    time.sleep(1.5)  # ten evaluations and a sender that would have posted at once
    assert receiver.accepted == []
    assert httpx.post(f"{url}/api/alerts/gpu1/token_usage_high/unmute", headers=AUTH).json()["muted_until"] is None
    low = every(T0 + 200, [0.5] * 70)  # usage falls: after keep_firing_for it resolves, and that is sent
    services.store.commit(Batch("gpu1", "server_log", "/l", samples=[Sample("token_usage", "", t, v) for t, v in low]))
    wait_for(lambda: receiver.states() == ["resolved"])
    assert receiver.accepted[0]["alert"]["rule"] == "token_usage_high"


def test_mute_for_is_bounded(running: tuple[Services, str]) -> None:
    _, url = running
    target = f"{url}/api/alerts/gpu1/token_usage_high/mute"
    assert httpx.post(target, headers=AUTH, json={"for_s": 0}).status_code == 422
    assert httpx.post(target, headers=AUTH, json={"for_s": 30 * 86400}).status_code == 422


def test_another_web_app_on_the_store_follows_acks_and_mutes(running: tuple[Services, str], tmp_path: Path) -> None:
    services, url = running
    saturate(services.store)
    firing(url)
    other = Services(services.config, SqliteStore(str(tmp_path / "kvwatch.db")))
    other.alerts = start_alerting(other, interval=0.1)  # a follower: the first app holds the lease
    try:
        assert httpx.post(f"{url}/api/alerts/gpu1/token_usage_high/ack", headers=AUTH).status_code == 200
        assert httpx.post(f"{url}/api/alerts/gpu1/token_usage_high/mute", headers=AUTH).status_code == 200
        seen = wait_for(lambda: [a for a in other.alerts.engine.snapshot() if a["acknowledged"] and a["muted_until"]]
                        if other.alerts else [])
        assert seen[0]["rule"] == "token_usage_high"
    finally:
        other.stop()
    assert services.alerts is not None
    services.alerts.stop()
    services.alerts = None
    stored = alerts_view(services)  # what a restarted app reads from the store alone
    assert (stored[0]["acknowledged"], stored[0]["muted_until"] is not None) == (True, True)
