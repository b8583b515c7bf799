"""The transports by name, and the one protocol every one of them implements in full."""

from __future__ import annotations

import ast
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvwatch.collectors.base import CollectorError, Transport
from kvwatch.collectors.local import LocalTransport
from kvwatch.collectors.metrics import scrape
from kvwatch.collectors.ssh.transport import SshTransport
from kvwatch.collectors.transports import TRANSPORTS, TransportSpec, open_transport

ROOT = Path(__file__).resolve().parents[2]


def protocol_members(proto: type) -> set[str]:
    own = {name for name in vars(proto) if not name.startswith("_")}
    return own | set(getattr(proto, "__annotations__", {}))


def test_the_registry_names_local_and_ssh() -> None:
    assert set(TRANSPORTS) == {"local", "ssh"}
    assert isinstance(open_transport("local", TransportSpec("here")), LocalTransport)


def test_an_unknown_transport_is_a_clear_error() -> None:
    with pytest.raises(CollectorError, match=r"unknown transport 'telnet' \(known: local, ssh\)"):
        open_transport("telnet", TransportSpec("gpu-7"))


@pytest.mark.parametrize("implementation", [LocalTransport, SshTransport])
def test_every_transport_has_every_declared_member(implementation: type) -> None:
    members = protocol_members(Transport)
    assert {"stat_many", "open_stream", "open_tunnel", "find_inode", "regular_files"} <= members
    missing = {name for name in members if not hasattr(implementation, name) and name != "name"}
    assert missing == set()


def test_nothing_outside_collectors_ssh_imports_paramiko() -> None:
    offenders = []
    for tree in ("app", "collectors", "parsers", "simulator"):
        for path in (ROOT / tree).rglob("*.py"):
            if path.parent == ROOT / "collectors" / "ssh":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                if any(n.split(".")[0] == "paramiko" for n in names):
                    offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_no_flat_ssh_modules_left_in_collectors() -> None:
    assert sorted(p.name for p in (ROOT / "collectors").glob("ssh*.py")) == []


@pytest.fixture
def metrics_server() -> Iterator[int]:
    class Exposition(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"sglang:num_running_reqs 7\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return None

    server = http.server.HTTPServer(("127.0.0.1", 0), Exposition)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_the_local_tunnel_scrapes_metrics_on_this_machine(metrics_server: int) -> None:
    assert scrape(LocalTransport(), metrics_server) == "sglang:num_running_reqs 7\n"


def test_a_closed_local_port_is_a_collector_error() -> None:
    with pytest.raises(CollectorError, match=r"connect to 127\.0\.0\.1:1: "):
        scrape(LocalTransport(), 1)
