"""Domain errors carry no HTTP code: app/api/errors.py maps each kind once, for every route."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from kvwatch.app.alerts.silences import AlertNotOpen
from kvwatch.app.api.errors import REFUSAL_STATUS, register_error_handlers
from kvwatch.app.controller import errors as refusals
from kvwatch.app.errors import ConfigError, KvwatchError, StoreUnavailable, UnknownRun
from kvwatch.app.flags.schema import ValidationError

ROOT = Path(__file__).resolve().parents[2]
RAISED: dict[str, Exception] = {
    "invalid": refusals.InvalidFlags([ValidationError("tp", "expected an integer, got 'x'")]),
    "vetoed": refusals.Vetoed("--kv-cache-dtype=fp8_e4m3 is vetoed on gpu1: accuracy"),
    "busy": refusals.Busy("a restart of gpu1 is already under way"),
    "stale": refusals.StaleRun("gpu1", "run-a", "run-b"),
    "limited": refusals.RateLimited("gpu1: 3 restarts within 600 s", retry_after=41.2),
    "unavailable": refusals.HostUnavailable("gpu1: cannot read sglang's flags"),
    "refused": refusals.RestartRefused("no"),
    "unknown_run": UnknownRun("unknown run 'r9'"),
    "bad_input": KvwatchError("window r1:50:10: ends before it starts"),
    "store_down": StoreUnavailable("server.database: PostgreSQL unreachable"),
    "config": ConfigError("kvwatch.toml: hosts[0].ssh: missing"),
    "not_open": AlertNotOpen("gpu1/token_usage_high is not pending or firing"),
}


@pytest.fixture
def client() -> TestClient:
    app = FastAPI()
    register_error_handlers(app)

    @app.get("/raise/{kind}")
    def raise_it(kind: str) -> None:
        raise RAISED[kind]

    return TestClient(app, raise_server_exceptions=False)


@pytest.mark.parametrize(("kind", "status"), [
    ("invalid", 422), ("vetoed", 403), ("busy", 409), ("stale", 409), ("limited", 429), ("unavailable", 503),
    ("refused", 400), ("unknown_run", 404), ("bad_input", 422), ("store_down", 503), ("config", 422),
    ("not_open", 409),
])
def test_each_kind_has_its_status_and_its_message(client: TestClient, kind: str, status: int) -> None:
    answer = client.get(f"/raise/{kind}")
    assert answer.status_code == status
    detail = answer.json()["detail"]
    message = detail["message"] if isinstance(detail, dict) else detail
    assert message == str(RAISED[kind])


def test_the_bodies_and_headers_a_client_acts_on(client: TestClient) -> None:
    stale = client.get("/raise/stale").json()
    assert stale["current_run"] == "run-b"
    assert client.get("/raise/limited").headers["retry-after"] == "42"
    assert client.get("/raise/store_down").headers["retry-after"] == "5"
    invalid = client.get("/raise/invalid").json()["detail"]
    assert invalid["errors"] == [{"flag": "tp", "message": "expected an integer, got 'x'"}]


def test_every_refusal_kind_is_mapped_and_none_carries_a_status() -> None:
    kinds = {obj for obj in vars(refusals).values()
             if isinstance(obj, type) and issubclass(obj, refusals.RestartRefused)}
    assert kinds == {kind for kind, _ in REFUSAL_STATUS}
    assert [k.__name__ for k in kinds if "status" in vars(k)] == []


def test_only_the_api_layer_knows_http() -> None:
    """Domain modules raise domain errors; HTTPException and status codes live in app/api/."""
    offenders = []
    for path in (ROOT / "app").rglob("*.py"):
        if "api" in path.relative_to(ROOT / "app").parts[:1]:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Name) and node.id == "HTTPException":
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
