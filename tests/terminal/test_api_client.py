"""Which kvwatch the commands read, and what they make of its answers (a stand-in server on loopback)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from kvwatch.app.errors import KvwatchError
from kvwatch.app.terminal.client import DEFAULT_URL, ApiClient, ApiError, Unreachable, resolve_url, server_url
from kvwatch.app.terminal.gather import gather
from tests.terminal.answers import EMPTY, SATURATED
from tests.terminal.fake_api import fake_kvwatch


def test_url_from_the_flag_then_the_environment_then_the_config(tmp_path: Path) -> None:
    config = tmp_path / "kvwatch.toml"
    config.write_text('[server]\nhost = "0.0.0.0"\nport = 9123\ntoken = "t"\n')
    config.chmod(0o600)
    env = {"KVWATCH_URL": "http://envhost:1/"}
    assert resolve_url("http://flag:2/", env, config) == "http://flag:2"
    assert resolve_url(None, env, config) == "http://envhost:1"
    assert resolve_url(None, {}, config) == "http://127.0.0.1:9123"


def test_url_from_the_discovered_config_else_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert resolve_url(None, {}) == DEFAULT_URL
    (tmp_path / "xdg" / "kvwatch").mkdir(parents=True)
    (tmp_path / "xdg" / "kvwatch" / "kvwatch.toml").write_text("[server]\nport = 9001\n")
    assert resolve_url(None, {}) == "http://127.0.0.1:9001"
    (tmp_path / "kvwatch.toml").write_text('[server]\nhost = "10.0.0.5"\nport = 9002\n')
    assert resolve_url(None, {}) == "http://10.0.0.5:9002"


def test_server_urls() -> None:
    assert server_url("::", 8765) == "http://127.0.0.1:8765"
    assert server_url("::1", 8765) == "http://[::1]:8765"
    assert server_url("gpu-box", 80) == "http://gpu-box:80"


def test_a_closed_port_is_unreachable_exit_1() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(Unreachable, match=f"cannot reach kvwatch at http://127.0.0.1:{port}") as caught:
        ApiClient(f"http://127.0.0.1:{port}", timeout=2).get("/api/hosts")
    assert caught.value.exit_code == 1


def test_http_errors_carry_fastapis_detail_and_non_json_is_not_kvwatch() -> None:
    routes = {"/api/oops": (500, {"detail": "database is locked"}), "/api/page": (200, "<html>")}
    with fake_kvwatch(routes) as (url, asked):
        client = ApiClient(url)
        with pytest.raises(ApiError, match="HTTP 500: database is locked"):
            client.get("/api/oops")
        with pytest.raises(Unreachable, match="not JSON"):
            client.get("/api/page")
        with pytest.raises(ApiError, match="HTTP 404: Not Found"):
            client.get("/api/nothing-here", {"a": 1, "b": None})
    assert asked[-1] == "/api/nothing-here?a=1"


def test_gather_adds_the_verdict_and_reads_a_missing_diagnosis_route_as_null() -> None:
    diagnosed = {"verdict": "kv_bound", "evidence": ["usage 0.96"], "suggestions": ["more KV"]}
    routes = {
        "/api/hosts": (200, [{"name": "gpu1"}, {"name": "gpu2"}]),
        "/api/hosts/gpu1/status": (200, SATURATED),
        "/api/hosts/gpu1/diagnosis": (200, diagnosed),
        "/api/hosts/gpu2/status": (200, EMPTY),
    }
    with fake_kvwatch(routes) as (url, _):
        both = gather(ApiClient(url), None)
        one = gather(ApiClient(url), "gpu2")
    assert [s["host"] for s in both] == ["gpu1", "gpu2"]
    assert both[0]["verdict"] == "kv_bound" and both[0]["diagnosis"] == diagnosed
    assert both[1] == EMPTY and one == [EMPTY]


def test_an_unknown_host_is_a_usage_error_naming_the_known_ones() -> None:
    routes = {"/api/hosts": (200, [{"name": "gpu1"}]),
              "/api/hosts/gpu9/status": (404, {"detail": "unknown host 'gpu9'"})}
    with fake_kvwatch(routes) as (url, _), pytest.raises(KvwatchError, match=r"no host named 'gpu9'.*gpu1") as caught:
        gather(ApiClient(url), "gpu9")
    assert caught.value.exit_code == 2


def test_a_kvwatch_without_the_status_route_says_so() -> None:
    with fake_kvwatch({}) as (url, _), pytest.raises(KvwatchError, match="older than `kvwatch status`") as caught:
        gather(ApiClient(url), "gpu1")
    assert caught.value.exit_code == 1
