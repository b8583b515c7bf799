"""X-Forwarded-For is believed only from `server.trusted_proxies`. The server runs with the uvicorn
settings `kvwatch serve` uses (`uvicorn_options`); with uvicorn's defaults, a client on 127.0.0.1
rotating the header got a fresh rate-limit bucket each request and chose the address in the audit."""

from __future__ import annotations

import threading
import time
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from kvwatch.app.api.limits import Limits
from kvwatch.app.config import ServerConfig, parse_config
from kvwatch.app.errors import ConfigError
from kvwatch.app.main import create_app
from kvwatch.app.runner import uvicorn_options
from tests.app.slice_helpers import start_services
from tests.controller.conftest import controllers  # noqa: F401  (the fixture, with its teardown)
from tests.controller.support import MemorySinks, free_port, make_config
from tests.hardening.world import TOKEN

BURST = 3
TIGHT = Limits(mutations_per_minute=0.01, mutation_burst=BURST)


@contextmanager
def kvwatch_server(
    tmp_path: Path, build: Callable[..., Any], server: ServerConfig
) -> Iterator[tuple[str, MemorySinks]]:
    sinks = MemorySinks()
    (tmp_path / "server.log").write_text("")
    app = create_app(start_services(tmp_path), manage_collectors=False, limits=TIGHT)
    app.state.api_token = TOKEN
    app.state.controllers = {"gpu1": build(make_config(tmp_path, free_port()), sinks=sinks)}
    port = free_port()
    uv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, **uvicorn_options(server)))
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not uv.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}", sinks
    finally:
        uv.should_exit = True
        thread.join(10)


def restarts(url: str, count: int) -> list[int]:
    """`count` restart requests (an unknown flag: refused and audited, nothing runs), each from a new forged address."""
    statuses = []
    with httpx.Client(base_url=url, timeout=10) as client:
        for n in range(count):
            answer = client.post("/api/hosts/gpu1/restart", json={"flags": {"no-such-flag": 1}}, headers={
                "Authorization": f"Bearer {TOKEN}", "X-Forwarded-For": f"203.0.113.{n + 1}"})
            statuses.append(answer.status_code)
    return statuses


def test_rotating_x_forwarded_for_does_not_reset_the_rate_limit(tmp_path: Path, controllers: Any) -> None:  # noqa: F811
    with kvwatch_server(tmp_path, controllers, ServerConfig()) as (url, sinks):
        statuses = restarts(url, BURST + 5)
    assert statuses == [422] * BURST + [429] * 5
    # The audit names the real peer, never the forged one.
    assert [record.who for record in sinks.audits] == ["api 127.0.0.1"] * BURST


def test_a_configured_proxy_is_believed(tmp_path: Path, controllers: Any) -> None:  # noqa: F811
    server = parse_config(tomllib.loads("""
        [server]
        trusted_proxies = ["127.0.0.0/8"]
    """)).server
    with kvwatch_server(tmp_path, controllers, server) as (url, sinks):
        statuses = restarts(url, BURST + 2)
    # Behind a trusted proxy each forwarded client has its own bucket, and the audit names it.
    assert statuses == [422] * (BURST + 2)
    assert [record.who for record in sinks.audits] == [f"api 203.0.113.{n + 1}" for n in range(BURST + 2)]


@pytest.mark.parametrize("value", [["*"], ["proxy.lan"], "10.0.0.1", [10]])
def test_bad_trusted_proxies_are_one_line_naming_the_field(value: object) -> None:
    with pytest.raises(ConfigError, match=r"^<memory>: server\.trusted_proxies: "):
        parse_config({"server": {"trusted_proxies": value}})
