"""Security headers on every answer of a real uvicorn: pages, JSON, the event stream, plotly.js, errors
and refusals; /docs is a local page without scripts (the schema stays at /openapi.json)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from kvwatch.app.api.headers import CONTENT_SECURITY_POLICY
from kvwatch.app.main import create_app
from tests.app.slice_helpers import start_services
from tests.fixtures.web import RunningServer, start_uvicorn
from tests.hardening.test_dns_rebinding import every_get_path


@pytest.fixture
def server(tmp_path: Path) -> RunningServer:
    (tmp_path / "server.log").write_text("")
    running = start_uvicorn(create_app(start_services(tmp_path), manage_collectors=False))
    yield running  # type: ignore[misc]
    running.stop()


def assert_secured(answer: httpx.Response) -> None:
    policy = answer.headers.get("content-security-policy", "")
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy, (answer.url, answer.headers)
    assert "default-src 'self'" in policy
    assert "'unsafe-inline'" not in policy.split("script-src", 1)[1].split(";", 1)[0]
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["x-frame-options"] == "DENY"


def test_every_answer_carries_the_headers(server: RunningServer) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as client:
        paths = every_get_path(server)
        for path in [*paths, "/vendor/plotly.min.js", "/no/such/page", "/static/style.css"]:
            assert_secured(client.get(path))
        assert_secured(client.get("/api/hosts", headers={"Host": "evil.example"}))  # 400
        assert_secured(client.post("/api/hosts/local/restart", json={}))  # 401
        assert_secured(client.post("/api/hosts/local/restart", content=b"x" * 100_000))  # 413
        with client.stream("GET", "/api/stream") as stream:
            assert stream.status_code == 200
            assert_secured(stream)


def test_docs_are_local_and_the_schema_is_served(server: RunningServer) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as client:
        docs = client.get("/docs")
        assert docs.status_code == 200 and docs.headers["content-type"].startswith("text/html")
        assert "<script" not in docs.text and "http" not in docs.text.replace('href="/openapi.json"', "")
        assert "GET /api/series" in docs.text and "POST /api/hosts/{name}/restart" in docs.text
        assert_secured(docs)
        assert client.get("/redoc").status_code == 404
        schema = client.get("/openapi.json")
        assert schema.status_code == 200 and "/api/hosts" in schema.json()["paths"]
    assert "cdn" not in CONTENT_SECURITY_POLICY
