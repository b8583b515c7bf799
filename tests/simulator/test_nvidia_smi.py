"""The demo's simulated nvidia-smi: nvidia-smi's CSV shape, numbers that follow the simulated server."""

from __future__ import annotations

import datetime as dt
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from kvwatch.parsers import create_parser
from kvwatch.simulator.nvidia_smi import gpu_lines

SERVER_INFO = {"mem_fraction_static": 0.88, "max_total_num_tokens": 1000}


@pytest.fixture
def server() -> Iterator[dict[str, Any]]:
    state: dict[str, Any] = {"loads": [{"num_reqs": 10, "num_waiting_reqs": 2, "num_tokens": 500}]}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps(SERVER_INFO if self.path == "/server_info" else state["loads"]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            return None

    httpd = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state["url"] = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield state
    httpd.shutdown()


def test_lines_parse_as_the_collectors_query(server: dict[str, Any]) -> None:
    lines = gpu_lines(server["url"], 8, dt.datetime(2026, 12, 2, 14, 53, 8, 174000))
    parser = create_parser("nvidia-smi")
    records = [r for i, line in enumerate(lines, 1) for r in parser.feed(i, line)]
    assert [r["gpu"] for r in records] == list(range(8))
    first = records[0]
    assert first["ts"] == "2026-12-02T14:53:08.174"
    assert first["mem_used_mib"] == round(first["mem_total_mib"] * 0.88)
    assert first["util_pct"] == 35 + round(65 * 0.5)  # half the KV tokens held


def test_an_idle_or_absent_server_reads_as_idle(server: dict[str, Any]) -> None:
    server["loads"] = [{"num_reqs": 0, "num_waiting_reqs": 0, "num_tokens": 0}]
    assert gpu_lines(server["url"], 1, dt.datetime(2026, 12, 2))[0].split(", ")[2] == "0"
    down = gpu_lines("http://127.0.0.1:1", 1, dt.datetime(2026, 12, 2))[0].split(", ")
    assert (down[2], down[3]) == ("0", "1")


CUT_SHORT = (
    b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{",  # IncompleteRead
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{",  # IncompleteRead, chunked
    b"",  # closed before the status line: RemoteDisconnected
    b"garbage\r\n\r\n",  # BadStatusLine
)


@pytest.mark.parametrize("answer", CUT_SHORT)
def test_a_server_killed_mid_answer_reads_as_down(answer: bytes) -> None:
    """A restart's SIGTERM can cut an answer short; the loop goes on (it used to die on http.client's
    IncompleteRead, leaving the GPU charts empty for the sampler's restart delay)."""
    listener = socket.create_server(("127.0.0.1", 0))

    def answer_once() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(4096)
            conn.sendall(answer)

    thread = threading.Thread(target=answer_once, daemon=True)
    thread.start()
    try:
        line = gpu_lines(f"http://127.0.0.1:{listener.getsockname()[1]}", 1, dt.datetime(2026, 12, 2))
    finally:
        thread.join(5)
        listener.close()
    assert line[0].split(", ")[2:4] == ["0", "1"]
