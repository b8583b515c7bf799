"""POST /api/hosts/{name}/restart/check: the restart's refusals per flag, without a token, changing nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from kvwatch.app.api import restart, restart_check
from kvwatch.app.api.errors import register_error_handlers
from kvwatch.app.controller.restart import HostController
from tests.controller.support import MemorySinks, free_port, make_config


@pytest.fixture
def api(tmp_path: Path, controllers: Callable[..., HostController], sinks: MemorySinks) -> TestClient:
    app = FastAPI()
    register_error_handlers(app)  # as create_app does
    app.include_router(restart.router)
    app.include_router(restart_check.router)
    app.state.controllers = {"gpu1": controllers(make_config(tmp_path, free_port()), sinks=sinks)}
    app.state.api_token = "t"
    return TestClient(app, base_url="http://127.0.0.1:8765")


def test_a_vetoed_and_an_out_of_range_value_are_named_per_flag(api: TestClient, sinks: MemorySinks) -> None:
    answer = api.post("/api/hosts/gpu1/restart/check",
                      json={"flags": {"kv-cache-dtype": "fp8_e5m2", "mem-fraction-static": 2}})
    assert answer.status_code == 200
    body = answer.json()
    assert body["ok"] is False
    assert {(p["flag"], p["kind"]) for p in body["problems"]} == {("kv-cache-dtype", "vetoed"),
                                                                  ("mem-fraction-static", "invalid")}
    assert sinks.audits == [] and sinks.started == []  # a dry run: nothing audited, nothing started


def test_a_clean_request_and_a_preset(api: TestClient) -> None:
    assert api.post("/api/hosts/gpu1/restart/check", json={"flags": {"mem-fraction-static": 0.85}}).json() == {
        "ok": True, "problems": []}
    vetoed = api.post("/api/hosts/gpu1/restart/check", json={"preset": "fp8-hicache-090"}).json()
    assert [p["kind"] for p in vetoed["problems"]] == ["vetoed"]


def test_unknown_host_cross_site_and_bad_body(api: TestClient) -> None:
    assert api.post("/api/hosts/nope/restart/check", json={"flags": {}}).status_code == 404
    cross = api.post("/api/hosts/gpu1/restart/check", json={"flags": {}}, headers={"Origin": "http://evil.example"})
    assert cross.status_code == 403
    assert api.post("/api/hosts/gpu1/restart/check", json={"flags": {}, "extra": 1}).status_code == 422
