"""A value back on the good side of its limit: the alert says `clearing` and when it resolves, in
/api/alerts, the SSE `alert` events, `kvwatch status` and the webhook; a resolved one says why."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kvwatch.app.alerts import start_alerting
from kvwatch.app.cli import main as kvwatch
from kvwatch.app.main import create_app
from kvwatch.app.services import Services
from kvwatch.app.store.base import Batch, EventRow, Sample, Store
from tests.alerts.recorded import T0, Rig, every
from tests.alerts.test_alert_api import saturate, services_for, wait_for
from tests.alerts.test_alert_webhook import Receiver

RULE = "token_usage_high"


def usage(store: Store, points: list[tuple[float, float]]) -> None:
    store.commit(Batch("gpu1", "server_log", "/l", samples=[Sample("token_usage", "", t, v) for t, v in points]))


def alert_events(response: httpx.Response, until: str) -> list[dict[str, Any]]:
    """The stream's `alert` events for RULE up to the first in state `until`."""
    seen, event = [], None
    for line in response.iter_lines():
        if line.startswith("event: "):
            event = line.removeprefix("event: ")
        elif line.startswith("data: ") and event == "alert":
            data = json.loads(line.removeprefix("data: "))
            if data["rule"] == RULE:
                seen.append(data)
                if data["state"] == until:
                    return seen
    raise AssertionError(f"the stream ended before {until}: {seen}")


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    running = services_for(tmp_path)
    yield running
    running.stop()


def test_a_value_back_under_the_limit_is_clearing_everywhere(
    services: Services, serve_app: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    server = serve_app(create_app(services, manage_collectors=False))
    services.alerts = start_alerting(services, interval=0.2)
    with httpx.stream("GET", f"{server.url}/api/stream", timeout=15) as response:
        saturate(services.store)  # 0.97 from T0 to T0+195: firing at T0+120
        wait_for(lambda: [a for a in services.alerts.engine.snapshot() if a["state"] == "firing"])  # type: ignore[union-attr]
        usage(services.store, every(T0 + 200, [0.69] * 6))  # back under stay_at (0.90) at T0+200
        events = alert_events(response, "clearing")
    assert [e["state"] for e in events] == ["pending", "firing", "clearing"]
    item = next(a for a in httpx.get(f"{server.url}/api/alerts").json() if a["rule"] == RULE)
    assert (item["state"], item["since"], item["value"]) == ("clearing", T0 + 200, pytest.approx(0.69))
    assert (item["resolves_at"], item["resolves_in_s"]) == (T0 + 500, 275.0)
    assert item["headline"] == "KV token usage high 0.69 < 0.90 (clearing — resolves in 4m35s)"
    assert item["summary"].endswith("clearing since 2026-02-24 12:52:34 (resolves in 4m35s)")
    assert item["resolved_reason"] is None
    assert kvwatch(["status", "--url", server.url, "--host", "gpu1"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if "token_usage_high" in line)
    assert re.fullmatch(r"  alerts   CLEARING token_usage_high 0\.69 for \S+ — resolves in 4m35s", line), line


def test_a_clearing_alert_firing_again_keeps_its_since_and_is_not_re_sent(tmp_path: Path) -> None:
    receiver = Receiver()
    services = services_for(tmp_path, webhook=receiver.url)
    try:
        alerting = services.alerts = start_alerting(services, interval=0.1)
        saturate(services.store)
        wait_for(lambda: receiver.states() == ["firing"])
        usage(services.store, every(T0 + 200, [0.5] * 4))
        wait_for(lambda: alerting.engine.current("gpu1", RULE)["state"] == "clearing")
        usage(services.store, every(T0 + 220, [0.96] * 4))
        wait_for(lambda: alerting.engine.current("gpu1", RULE)["state"] == "firing")
        assert alerting.engine.current("gpu1", RULE)["since"] == T0 + 120
        usage(services.store, every(T0 + 240, [0.5] * 62))  # 305 s under stay_at: resolved, reason cleared
        wait_for(lambda: receiver.states() == ["firing", "resolved"])
        resolved = receiver.accepted[1]
        assert resolved["alert"]["resolved_reason"] == "cleared"
        assert resolved["text"].startswith("[RESOLVED] gpu1: KV token usage high (50.0%)")
        assert "resolved: condition cleared" in resolved["text"]
    finally:
        services.stop()
        receiver.close()


def test_a_run_ending_is_sent_and_logged_as_resolved_with_its_reason(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    receiver = Receiver()
    services = services_for(tmp_path, webhook=receiver.url)
    caplog.set_level(logging.INFO, logger="kvwatch.app.alerts.engine")
    try:
        services.alerts = start_alerting(services, interval=0.1)
        saturate(services.store)
        wait_for(lambda: receiver.states() == ["firing"])
        start = [EventRow("server_args", T0 + 300, 1, {"args": {"kv_cache_dtype": "fp8_e5m2"}, "ts": ""})]
        services.store.commit(Batch("gpu1", "server_log", "/l", events=start))
        wait_for(lambda: receiver.states() == ["firing", "resolved"])
        body = receiver.accepted[1]
        assert (body["status"], body["previous"]) == ("resolved", "firing")
        assert (body["alert"]["resolved_reason"], body["alert"]["since"]) == ("run_ended", T0 + 300)
        assert "resolved: the server run ended (new run gpu1-20260224T125414)" in body["text"]
        assert any("firing -> resolved" in r.message and "run_ended" in r.message for r in caplog.records)
    finally:
        services.stop()
        receiver.close()


def test_a_firing_alert_held_by_hysteresis_headlines_against_stay_at(tmp_path: Path) -> None:
    rig = Rig(tmp_path / "kvwatch.db")
    rig.play("token_usage", every(T0, [0.97] * 30 + [0.92] * 4))  # firing, then between stay_at and fire_at
    alert = rig.alert(RULE)
    assert alert is not None
    assert (alert["state"], alert["headline"]) == ("firing", "KV token usage high 0.92 ≥ 0.90")


def test_a_stored_firing_alert_waiting_out_keep_firing_for_is_read_as_clearing(tmp_path: Path) -> None:
    rig = Rig(tmp_path / "kvwatch.db")
    older = {"rule": RULE, "host": "gpu1", "state": "firing", "since": T0 + 120, "active_at": T0,
             "keep_firing_since": T0 + 200, "value": 0.5, "seq": 2, "evaluated_to": T0 + 260}
    rig.store.put_document("alert", f"gpu1/{RULE}", "gpu1", T0 + 120, older)  # as kvwatch before clearing stored it
    rig.engine = rig.new_engine()
    alert = rig.alert(RULE)
    assert alert is not None
    assert (alert["state"], alert["resolves_in_s"]) == ("clearing", 240.0)
    assert alert["headline"] == "KV token usage high 0.50 < 0.90 (clearing — resolves in 4m)"
