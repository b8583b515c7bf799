"""300 idle TCP connections against a 256-descriptor limit: the real `kvwatch serve` (under prlimit)
answers a person's request within seconds, keeps collecting, and its log stays small. Connections past
the web server's budget get a 503 at once; idle ones are closed after 5 s."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from kvwatch.app.connection_budget import QuietRepeats, connection_budget
from tests.app.slice_helpers import append_lines, wait_until
from tests.fixtures.sshd import _free_port


def test_the_budget_leaves_the_collectors_their_descriptors() -> None:
    assert connection_budget(1, nofile=256) == 256 - 64 - 8
    assert connection_budget(64, nofile=256) == 16  # never below MIN_BUDGET
    assert connection_budget(1, nofile=1 << 20) == (1 << 20) - 72


def test_quiet_repeats_lets_one_in_ten_seconds_through_with_the_count() -> None:
    import logging

    quiet, clock = QuietRepeats(every=10.0), [0.0]
    quiet_time = time.monotonic
    try:
        time.monotonic = lambda: clock[0]  # type: ignore[assignment]
        record = logging.LogRecord("asyncio", logging.ERROR, "f", 1, "socket.accept() out of system resource",
                                   None, (OSError, OSError(24, "Too many open files"), None))
        assert quiet.filter(record) and record.exc_info is None
        repeats = [logging.makeLogRecord({"name": "asyncio", "msg": record.msg}) for _ in range(500)]
        assert [quiet.filter(repeat) for repeat in repeats] == [False] * 500
        clock[0] = 11.0
        later = logging.makeLogRecord({"name": "asyncio", "msg": "socket.accept() out of system resource"})
        assert quiet.filter(later) and "500 more like this" in later.getMessage()
    finally:
        time.monotonic = quiet_time  # type: ignore[assignment]


def test_idle_connections_cannot_starve_the_server(tmp_path: Path) -> None:
    port = _free_port()
    log = tmp_path / "server.log"
    append_lines(log, 1, 10)
    config = tmp_path / "kvwatch.toml"
    config.write_text(f'[server]\nport = {port}\ndata_dir = "{tmp_path}"\n'
                      f'[[hosts]]\nname = "local"\nssh = "local"\nserver_log = "{log}"\n')
    stderr = tmp_path / "stderr.log"
    with stderr.open("wb") as err:
        proc = subprocess.Popen(["prlimit", "--nofile=256:256", sys.executable, "-m", "kvwatch.app", "serve",
                                 "--config", str(config)], stdout=err, stderr=err)
    url = f"http://127.0.0.1:{port}"
    idle: list[socket.socket] = []
    try:
        wait_until(lambda: _answers(url) == 200, timeout=60)
        for _ in range(300):
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        started = time.monotonic()
        append_lines(log, 11, 20)  # collection goes on through the flood
        wait_until(lambda: _answers(url) == 200, timeout=30)
        answered_in = time.monotonic() - started
        print(f"answered {answered_in:.1f} s into the flood")
        assert answered_in < 15.0, answered_in
        points = httpx.get(f"{url}/api/series", params={"host": "local", "metric": "running_req"}, timeout=10)
        wait_until(lambda: len(httpx.get(f"{url}/api/series", params={"host": "local", "metric": "running_req"},
                                         timeout=10).json()["points"]) == 30, timeout=30)
        assert points.status_code == 200
        closed = sum(_closed_by_server(s) for s in idle)
        assert closed == 300  # a 503 at once past the budget, or closed after 5 s idle
        assert stderr.stat().st_size < 64 * 1024, stderr.stat().st_size
    finally:
        for s in idle:
            s.close()
        proc.terminate()
        proc.wait(timeout=30)


def _answers(url: str) -> int:
    try:
        return httpx.get(f"{url}/api/hosts", timeout=2).status_code
    except httpx.HTTPError:
        return 0


def _closed_by_server(sock: socket.socket) -> bool:
    sock.settimeout(10)
    try:
        data = sock.recv(4096)
        while data:
            if not data.startswith(b"HTTP/1.1 503"):
                return False
            data = sock.recv(4096)
        return True
    except OSError:
        return True  # reset by the server
