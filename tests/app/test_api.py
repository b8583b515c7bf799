"""The slice's HTTP side through a real uvicorn: hosts, series (downsampled), live SSE."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import httpx

from kvwatch.app.main import create_app
from tests.app.slice_helpers import append_lines, start_services, wait_until


def test_hosts_and_series(tmp_path: Path, serve_app: Any) -> None:
    append_lines(tmp_path / "server.log", 1, 500)
    services = start_services(tmp_path)
    server = serve_app(create_app(services))
    wait_until(lambda: len(services.store.series("local", "gen_throughput")[0]) == 500)
    hosts = httpx.get(f"{server.url}/api/hosts").json()
    assert [h["name"] for h in hosts] == ["local"]
    assert hosts[0]["state"] == "up"
    assert hosts[0]["sources"]["server_log"]["lines"] == 500
    full = httpx.get(f"{server.url}/api/series", params={"host": "local", "metric": "gen_throughput"}).json()
    assert [v for _, v in full["points"]] == [900.0 + n for n in range(1, 501)]
    small = httpx.get(
        f"{server.url}/api/series", params={"host": "local", "metric": "gen_throughput", "max_points": 50}
    ).json()
    values = [v for _, v in small["points"]]
    assert len(values) <= 50
    assert min(values) == 901.0 and max(values) == 1400.0  # extremes kept
    since = full["points"][-11][0]
    tail = httpx.get(
        f"{server.url}/api/series", params={"host": "local", "metric": "gen_throughput", "since": since}
    ).json()
    assert len(tail["points"]) == 10


def test_series_rejects_unknown_host_and_bad_max_points(tmp_path: Path, serve_app: Any) -> None:
    server = serve_app(create_app(start_services(tmp_path)))
    assert httpx.get(f"{server.url}/api/series", params={"host": "nope", "metric": "x"}).status_code == 404
    bad = httpx.get(f"{server.url}/api/series", params={"host": "local", "metric": "x", "max_points": 1})
    assert bad.status_code == 422


def test_stream_carries_new_samples(tmp_path: Path, serve_app: Any) -> None:
    append_lines(tmp_path / "server.log", 1, 1)
    services = start_services(tmp_path)
    server = serve_app(create_app(services))
    wait_until(lambda: len(services.store.series("local", "token_usage")[0]) == 1)
    received: list[dict[str, Any]] = []

    def listen() -> None:
        with httpx.stream("GET", f"{server.url}/api/stream", timeout=10) as response:
            event = None
            for line in response.iter_lines():
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: ") and event == "sample":
                    received.append(json.loads(line[6:]))
                    return

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    wait_until(lambda: len(services.bus._subscribers) == 1)
    append_lines(tmp_path / "server.log", 2, 1)
    listener.join(10)
    assert received, "no sample event arrived"
    assert received[0]["host"] == "local"
    assert received[0]["points"]["running_req"][0][1] == 2.0
