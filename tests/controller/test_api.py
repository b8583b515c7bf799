"""POST /api/hosts/{name}/restart and the panel's read-only views, through FastAPI's TestClient."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from kvwatch.app.api.errors import register_error_handlers
from kvwatch.app.api.restart import router
from kvwatch.app.controller.restart import HostController
from tests.controller.support import MemorySinks, free_port, make_config

TOKEN = "correct horse battery staple"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def api(tmp_path: Path, controllers: Callable[..., HostController], sinks: MemorySinks) -> TestClient:
    app = FastAPI()
    register_error_handlers(app)  # as create_app does
    app.include_router(router)
    app.state.controllers = {"gpu1": controllers(make_config(tmp_path, free_port()), sinks=sinks)}
    app.state.api_token = TOKEN
    return TestClient(app, base_url="http://127.0.0.1:8765")


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN},
                                     {"Authorization": f"Basic {TOKEN}"}, {"Authorization": "Bearer "}])
def test_no_or_wrong_token_is_401(api: TestClient, sinks: MemorySinks, headers: dict[str, str]) -> None:
    answer = api.post("/api/hosts/gpu1/restart", json={"preset": "bf16-hicache-088"}, headers=headers)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == "Bearer"
    assert sinks.audits == []  # an unauthenticated request does not even reach the controller


def test_without_a_configured_token_restarts_are_refused(api: TestClient, monkeypatch) -> None:
    monkeypatch.delenv("KVWATCH_TOKEN", raising=False)
    api.app.state.api_token = None  # type: ignore[attr-defined]
    answer = api.post("/api/hosts/gpu1/restart", json={"preset": "x"}, headers={"Authorization": "Bearer "})
    assert answer.status_code == 401
    assert "no API token configured" in answer.json()["detail"]


def test_token_from_the_environment(api: TestClient, monkeypatch) -> None:
    api.app.state.api_token = None  # type: ignore[attr-defined]
    monkeypatch.setenv("KVWATCH_TOKEN", "from-env")
    answer = api.post("/api/hosts/gpu1/restart", json={"flags": {"tp": "x"}},
                      headers={"Authorization": "Bearer from-env"})
    assert answer.status_code == 422


@pytest.mark.parametrize("origin", ["http://evil.example", "http://127.0.0.1:9999", "null", "https://127.0.0.1:8765"])
def test_cross_site_origin_is_403_even_with_the_token(api: TestClient, sinks: MemorySinks, origin: str) -> None:
    answer = api.post("/api/hosts/gpu1/restart", json={"preset": "bf16-hicache-088"},
                      headers={**AUTH, "Origin": origin})
    assert answer.status_code == 403
    assert "cross-site" in answer.json()["detail"]
    assert sinks.audits == []


def test_fetch_metadata_cross_site_is_403(api: TestClient) -> None:
    answer = api.post("/api/hosts/gpu1/restart", json={"preset": "bf16-hicache-088"},
                      headers={**AUTH, "Sec-Fetch-Site": "cross-site"})
    assert answer.status_code == 403


def test_invalid_flags_are_422_with_every_error(api: TestClient, sinks: MemorySinks) -> None:
    answer = api.post("/api/hosts/gpu1/restart", headers=AUTH,
                      json={"flags": {"no-such-flag": 1, "kv-cache-dtype": "fp4_e2m1", "tp": "eight"}})
    assert answer.status_code == 422
    errors = {e["flag"]: e["message"] for e in answer.json()["detail"]["errors"]}
    assert errors["no-such-flag"] == "unknown flag for sglang 0.5.23"
    assert "is not one of auto, fp8_e5m2" in errors["kv-cache-dtype"]
    assert errors["tp"] == "expected an integer, got 'eight'"
    assert [a.outcome for a in sinks.audits] == ["invalid"]


@pytest.mark.parametrize("body", [{}, {"flags": "mem-fraction-static=0.9"}, {"preset": "nope"},
                                  {"flags": {}, "extra": 1}])
def test_malformed_bodies_are_422(api: TestClient, body: dict[str, object]) -> None:
    assert api.post("/api/hosts/gpu1/restart", headers=AUTH, json=body).status_code == 422


def test_vetoed_is_403_with_the_reason(api: TestClient, sinks: MemorySinks) -> None:
    answer = api.post("/api/hosts/gpu1/restart", headers=AUTH, json={"preset": "fp8-hicache-090"})
    assert answer.status_code == 403
    assert "degrades the model noticeably" in answer.json()["detail"]
    assert [a.outcome for a in sinks.audits] == ["vetoed"]
    assert sinks.started == []


def test_unknown_host_is_404(api: TestClient) -> None:
    assert api.post("/api/hosts/nope/restart", headers=AUTH, json={"preset": "x"}).status_code == 404


def test_restart_is_202_then_progress_then_a_new_run(api: TestClient, sinks: MemorySinks) -> None:
    answer = api.post("/api/hosts/gpu1/restart", headers={**AUTH, "Origin": "http://127.0.0.1:8765"},
                      json={"preset": "bf16-hicache-088", "flags": {"decode-log-interval": 10}})
    assert answer.status_code == 202, answer.text
    run_id = answer.json()["run_id"]
    busy = api.post("/api/hosts/gpu1/restart", headers=AUTH, json={"flags": {"mem-fraction-static": 0.85}})
    assert busy.status_code == 409
    controller = api.app.state.controllers["gpu1"]  # type: ignore[attr-defined]
    controller.wait(120)
    status = api.get("/api/hosts/gpu1/restart").json()
    assert status["operation"]["outcome"] == "ok"
    assert status["operation"]["run_id"] == run_id
    assert any("ready to roll" in line for line in status["operation"]["log_tail"])
    view = api.get("/api/hosts/gpu1/controller").json()
    assert view["current"]["run_id"] == run_id
    assert view["current"]["flags"]["decode-log-interval"] == 10
    assert {p["name"] for p in view["presets"]} == {"bf16-hicache-088", "fp8-hicache-090"}
    assert view["vetoes"][0]["value"] == "fp8*"
    assert sinks.started[0][1] == run_id


def test_flag_schema_for_the_editor(api: TestClient) -> None:
    body = api.get("/api/hosts/gpu1/flags").json()
    assert body["sglang"] == "0.5.23"
    kv = next(o for o in body["options"] if o["name"] == "kv-cache-dtype")
    assert kv["default"] == "auto"
    assert "fp8_e4m3" in kv["choices"]


def test_expected_run_is_checked_against_the_run_this_controller_started(api: TestClient, sinks: MemorySinks) -> None:
    """Without a run registry wired in (no store), the current run is the one the controller started last."""
    assert api.get("/api/hosts/gpu1/controller").json()["run"] is None
    never = api.post("/api/hosts/gpu1/restart", headers=AUTH, json={"preset": "bf16-hicache-088",
                                                                     "expected_run": "gpu1-run0"})
    assert never.status_code == 409 and never.json()["current_run"] is None
    assert sinks.started == [] and [a.outcome for a in sinks.audits] == ["stale"]
    first = api.post("/api/hosts/gpu1/restart", headers=AUTH, json={"preset": "bf16-hicache-088"})
    assert first.status_code == 202, first.text
    controller = api.app.state.controllers["gpu1"]  # type: ignore[attr-defined]
    controller.wait(120)
    run_id = first.json()["run_id"]
    view = api.get("/api/hosts/gpu1/controller").json()
    assert view["run"]["id"] == run_id and view["run"]["flags"]["mem-fraction-static"] == 0.88
    stale = api.post("/api/hosts/gpu1/restart", headers=AUTH, json={"flags": {"mem-fraction-static": 0.85},
                                                                     "expected_run": "gpu1-run0"})
    assert stale.status_code == 409
    body = stale.json()
    assert body == {"detail": body["detail"], "current_run": run_id} and run_id in body["detail"]
    assert len(sinks.started) == 1 and controller.inspect()["run_id"] == run_id
    fresh = api.post("/api/hosts/gpu1/restart", headers=AUTH, json={"flags": {"mem-fraction-static": 0.85},
                                                                     "expected_run": run_id})
    assert fresh.status_code == 202, fresh.text
    assert controller.wait(120).outcome == "ok"
    assert [a.outcome for a in sinks.audits] == ["stale", "ok", "stale", "ok"]


def test_a_flood_of_panel_views_asks_the_host_once(api: TestClient) -> None:
    """30 unauthenticated GETs of the controller panel at once start one helper call on the GPU host,
    not 30 (they used to exhaust sshd's sessions and make a token holder's restart fail)."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    controller = api.app.state.controllers["gpu1"]  # type: ignore[attr-defined]
    real_status, calls, lock = controller.remote.status, [], threading.Lock()

    def counted_status(*args: object, **kwargs: object) -> object:
        with lock:
            calls.append(time.monotonic())
        time.sleep(0.3)  # the helper's round trip
        return real_status(*args, **kwargs)

    controller.remote.status = counted_status
    with ThreadPoolExecutor(max_workers=30) as pool:
        answers = list(pool.map(lambda _: api.get("/api/hosts/gpu1/controller"), range(30)))
    assert [a.status_code for a in answers] == [200] * 30
    assert len({a.text for a in answers}) == 1 and len(calls) == 1
