"""DNS rebinding: a real uvicorn answers only the Host names it was given (loopback, the bind address,
server.allowed_hosts, KVWATCH_ALLOWED_HOSTS); every other name gets 400 on every route, read or write.
Requests are written by hand on a socket, so the Host header is exactly what a rebinding page sends."""

from __future__ import annotations

import re
import socket
import tomllib
from pathlib import Path

import pytest

from kvwatch.app.config import parse_config
from kvwatch.app.errors import ConfigError
from kvwatch.app.main import answered_hosts, create_app
from kvwatch.app.services import Services
from tests.app.slice_helpers import start_services
from tests.fixtures.web import RunningServer, start_uvicorn
from tests.hardening.test_http_guards import api_routes

FOREIGN = ["evil.example", "evil.example:{port}", "127.0.0.1.evil.example:{port}", "localhost.evil.example",
           "attacker.test:80", "0.0.0.0:{port}", "[::2]:{port}", "127.0.0.2:{port}"]
LOOPBACK = ["127.0.0.1:{port}", "127.0.0.1", "localhost:{port}", "LOCALHOST", "[::1]:{port}"]


def raw_status(port: int, request: bytes) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        head = b""
        while b"\r\n" not in head:
            chunk = sock.recv(4096)
            if not chunk:
                break
            head += chunk
    match = re.match(rb"HTTP/1\.[01] (\d{3})", head)
    assert match, head
    return int(match.group(1))


def get(port: int, path: str, host: str | None, method: str = "GET") -> int:
    host_line = b"" if host is None else f"Host: {host.format(port=port)}\r\n".encode()
    body = b'{"preset": "x"}' if method == "POST" else b""
    return raw_status(port, f"{method} {path} HTTP/1.1\r\n".encode() + host_line
                      + f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                      f"Connection: close\r\n\r\n".encode() + body)


def every_get_path(server: RunningServer) -> list[str]:
    app = server.server.config.app
    paths = {re.sub(r"\{[^}]+\}", "local", route.path) for route in api_routes(app.routes)
             if "GET" in (route.methods or set()) and "stream" not in route.path}
    return sorted(paths | {"/", "/static/index.html", "/openapi.json"})


@pytest.fixture
def services(tmp_path: Path) -> Services:
    (tmp_path / "server.log").write_text("")
    return start_services(tmp_path)


def serve(services: Services, bind: str | None = None) -> RunningServer:
    return start_uvicorn(create_app(services, manage_collectors=False, bind=bind))


def test_every_route_refuses_a_foreign_host(services: Services) -> None:
    server = serve(services)
    try:
        paths = every_get_path(server)
        assert "/api/hosts" in paths and "/metrics" in paths and len(paths) > 10
        for path in [*paths, "/api/stream"]:
            for host in FOREIGN:
                assert get(server.port, path, host) == 400, (path, host)
            assert get(server.port, path, None) == 400, path  # no Host at all
        # The mutating route too, before its token or rate checks are consulted.
        assert get(server.port, "/api/hosts/local/restart", "evil.example", "POST") == 400
    finally:
        server.stop()


def test_loopback_names_are_answered(services: Services) -> None:
    server = serve(services)
    try:
        for host in LOOPBACK:
            assert get(server.port, "/api/hosts", host) == 200, host
            assert get(server.port, "/", host) == 200, host
    finally:
        server.stop()


def test_configured_names_and_the_bind_address_are_answered(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    server_config = parse_config(tomllib.loads("""
        [server]
        host = "127.0.0.2"
        allowed_hosts = ["kvwatch.internal", "*.corp.example", "10.1.2.3", "FD00::1"]
    """)).server
    services.config = services.config.model_copy(update={"server": server_config})
    monkeypatch.setenv("KVWATCH_ALLOWED_HOSTS", "kvwatch, prom.lan")
    server = serve(services)
    try:
        for host in ["kvwatch.internal:{port}", "KVWATCH.internal", "a.corp.example:443", "10.1.2.3:{port}",
                     "[fd00::1]:{port}", "127.0.0.2:{port}", "kvwatch:8765", "prom.lan"]:
            assert get(server.port, "/api/hosts", host) == 200, host
        for host in ["corp.example.evil", "kvwatch.internal.evil", "prom.lan.x", "10.1.2.4"]:
            assert get(server.port, "/api/hosts", host) == 400, host
    finally:
        server.stop()


def test_a_wildcard_bind_address_is_not_a_name() -> None:
    config = parse_config({"server": {"host": "0.0.0.0"}})
    assert "0.0.0.0" not in answered_hosts(config)
    assert "[::]" not in answered_hosts(config, "::")
    assert "[fd00::5]" in answered_hosts(config, "fd00::5")
    assert "gpu-box.lan" in answered_hosts(config, "gpu-box.lan")


@pytest.mark.parametrize("value", [["http://evil.example"], ["evil.example:8765"], ["*"], ["a b"], "one.example",
                                   [""], ["evil.*"], [3]])
def test_bad_allowed_hosts_are_one_line_naming_the_field(value: object) -> None:
    with pytest.raises(ConfigError, match=r"^<memory>: server\.allowed_hosts: ") as raised:
        parse_config({"server": {"allowed_hosts": value}})
    assert "\n" not in str(raised.value)


def test_a_bad_environment_name_stops_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KVWATCH_ALLOWED_HOSTS", "ok.example,http://x")
    with pytest.raises(ConfigError, match="KVWATCH_ALLOWED_HOSTS"):
        answered_hosts(parse_config({}))
