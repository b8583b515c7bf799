"""Every mutating route refuses a missing or wrong token (401) and a cross-site Origin (403); bodies
are bounded (413) and so is the rate of mutating requests (429). The route list is read from the app
itself, so a new POST/PUT/PATCH/DELETE route without these guards fails here."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from kvwatch.app.api.diagnosis import READ_ONLY_POSTS
from kvwatch.app.api.limits import MAX_CLIENTS, MUTATING, Limits, MutationRateLimit
from kvwatch.app.main import create_app
from tests.app.slice_helpers import start_services
from tests.hardening.world import OPEN_LIMITS, TOKEN, served_world

AUTH = {"Authorization": f"Bearer {TOKEN}"}
BASE = "http://127.0.0.1:8765"


def client(tmp_path: Path, limits: Limits = OPEN_LIMITS) -> TestClient:
    app = create_app(start_services(tmp_path), manage_collectors=False, limits=limits)
    app.state.api_token = TOKEN
    return TestClient(app, base_url=BASE)


def api_routes(routes: list[Any]) -> Iterator[APIRoute]:
    """Every APIRoute, also inside included routers (FastAPI >= 0.16x keeps them as _IncludedRouter)."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        inner = getattr(route, "original_router", None)
        if inner is not None:
            assert not getattr(inner, "prefix", ""), "a prefixed router: build its paths here"
            yield from api_routes(inner.routes)


def mutating_routes(api: TestClient, read_only: bool = True) -> list[tuple[str, str]]:
    """POST/PUT/PATCH/DELETE routes; `read_only=False` leaves out the POSTs that change nothing."""
    found = []
    for route in api_routes(api.app.routes):  # type: ignore[attr-defined]
        if not read_only and route.path in READ_ONLY_POSTS:
            continue
        for method in sorted((route.methods or set()) & MUTATING):
            found.append((method, re.sub(r"\{[^}]+\}", "local", route.path)))
    return found


@pytest.fixture
def api(tmp_path: Path) -> Iterator[TestClient]:
    with client(tmp_path) as test_client:
        yield test_client


def test_the_app_has_mutating_routes_to_guard(api: TestClient) -> None:
    assert ("POST", "/api/hosts/local/restart") in mutating_routes(api)


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN},
                                     {"Authorization": f"Bearer {TOKEN}x"}, {"Authorization": "Bearer"}])
def test_every_mutating_route_needs_the_token(api: TestClient, headers: dict[str, str]) -> None:
    for method, path in mutating_routes(api, read_only=False):
        answer = api.request(method, path, json={"preset": "x"}, headers=headers)
        assert answer.status_code == 401, (method, path, answer.text)
        assert TOKEN not in answer.text


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://127.0.0.1:9", "https://127.0.0.1:8765",
                                    "http://127.0.0.1.evil.example:8765"])
def test_every_mutating_route_refuses_cross_site_requests(api: TestClient, origin: str) -> None:
    for method, path in mutating_routes(api):
        answer = api.request(method, path, json={"preset": "x"}, headers={**AUTH, "Origin": origin})
        assert answer.status_code == 403, (method, path, answer.text)


def test_a_read_only_post_needs_no_token_but_keeps_the_origin_rule(api: TestClient) -> None:
    predict = "/api/hosts/local/predict"
    assert ("POST", predict) in mutating_routes(api) and ("POST", predict) not in mutating_routes(api, False)
    assert api.post(predict, json={"flags": {"mem-fraction-static": 0.85}}).status_code == 200
    cross = api.post(predict, json={"flags": {}}, headers={"Origin": "http://evil.example"})
    assert cross.status_code == 403


def test_a_same_origin_request_with_the_token_gets_past_the_guards(api: TestClient) -> None:
    for method, path in mutating_routes(api):
        answer = api.request(method, path, json={"preset": "x"}, headers={**AUTH, "Origin": BASE})
        assert answer.status_code not in (401, 403), (method, path, answer.text)


def test_bodies_over_the_limit_are_413(tmp_path: Path) -> None:
    with client(tmp_path, Limits(max_body_bytes=1024, mutations_per_minute=1e9, mutation_burst=10**9)) as api:
        big = b'{"flags": {"x": "' + b"a" * 4096 + b'"}}'
        declared = api.post("/api/hosts/local/restart", content=big, headers=AUTH)
        assert declared.status_code == 413

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            for _ in range(64):
                yield b"a" * 512

        chunked = api.post("/api/hosts/local/restart", content=chunks(), headers=AUTH)
        assert chunked.status_code == 413
        assert api.post("/api/hosts/local/restart", json={"preset": "x"}, headers=AUTH).status_code != 413


def test_mutating_requests_are_rate_limited_per_client_and_reads_are_not(tmp_path: Path) -> None:
    with client(tmp_path, Limits(mutations_per_minute=6, mutation_burst=5)) as api:
        codes = [api.post("/api/hosts/local/restart", json={"preset": "x"}).status_code for _ in range(12)]
        assert codes[:5] == [401] * 5
        assert set(codes[5:]) == {429}
        limited = api.post("/api/hosts/local/restart", json={"preset": "x"})
        assert int(limited.headers["retry-after"]) >= 1
        assert all(api.get("/api/hosts").status_code == 200 for _ in range(30))


def test_what_if_and_dry_runs_do_not_spend_the_restart_budget(tmp_path: Path) -> None:
    """The restart panel posts a what-if and a dry run on every edit: they change nothing."""
    with client(tmp_path, Limits(mutations_per_minute=6, mutation_burst=5)) as api:
        for _ in range(20):
            assert api.post("/api/hosts/local/predict", json={"flags": {}}).status_code != 429
            assert api.post("/api/hosts/local/restart/check", json={"flags": {}}).status_code != 429
        codes = [api.post("/api/hosts/local/restart", json={"preset": "x"}).status_code for _ in range(6)]
        assert codes[:5] == [401] * 5 and codes[5] == 429


def test_the_guards_hold_over_a_real_server(tmp_path: Path) -> None:
    with served_world(tmp_path, limits=Limits(), lines=10) as world:
        url = f"{world.url}/api/hosts/local/restart"
        huge = httpx.post(url, content=b"{" + b" " * (1 << 20) + b"}", headers=AUTH, timeout=30)
        assert huge.status_code == 413
        tries = range(Limits().mutation_burst + 5)
        codes = [httpx.post(url, json={"preset": "x"}, timeout=10).status_code for _ in tries]
        assert codes[-1] == 429 and 401 in codes


def test_rate_buckets_of_many_clients_are_bounded() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("never reached in this test")

    limiter = MutationRateLimit(app, per_minute=60_000, burst=2)
    for n in range(MAX_CLIENTS * 3):
        assert limiter._take(f"10.0.{n // 256}.{n % 256}") == 0.0
    assert len(limiter._buckets) <= MAX_CLIENTS + 1
