"""The simulator as the remote server behind the real sshd: started over SSH, log read over SFTP,
/metrics scraped through an SSH tunnel, as kvwatch does with a GPU host."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import sys
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kvwatch.collectors.base import SourceMissing
from kvwatch.simulator.demo import free_port
from tests.fixtures.sshd import Sshd
from tests.simulator.helpers import KIMI_088, REPO


def stop_by_pid_file(pid_file: Path) -> None:
    """SIGTERM the server started over SSH (its pid file may lag its start) and wait for it to end."""
    deadline = time.monotonic() + 30
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    pid = int(pid_file.read_text())
    os.kill(pid, signal.SIGTERM)
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline + 30:
        time.sleep(0.2)


def scrape_through_tunnel(sshd: Sshd, port: int) -> str:
    transport = sshd.connect()
    try:
        chan = transport.open_tunnel("127.0.0.1", port)
        chan.sendall(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        data = b""
        while chunk := chan.recv(65536):
            data += chunk
        chan.close()
    finally:
        transport.close()
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 200") or head.startswith(b"HTTP/1.1 200"), head
    return body.decode()


@pytest.mark.sshd
def test_simulator_behind_sshd(sshd: Sshd, tmp_path: Path) -> None:
    port = free_port()
    log, pid_file = tmp_path / "sglang_inference.log", tmp_path / "server.pid"
    argv = [sys.executable, "-m", "kvwatch.simulator.server", *KIMI_088, "--enable-metrics", "--port", str(port),
            "--sim-speed", "60", "--sim-log-file", str(log), "--sim-pid-file", str(pid_file)]
    command = f"cd {shlex.quote(str(REPO))} && nohup {shlex.join(argv)} >/dev/null 2>&1 &"
    transport = sshd.connect()
    try:
        assert transport.run(["sh", "-c", command]).exit_status == 0
        deadline = time.monotonic() + 60
        text = ""
        while "The server is fired up and ready to roll!" not in text and time.monotonic() < deadline:
            time.sleep(0.3)
            with contextlib.suppress(SourceMissing):  # not created yet
                text = transport.read(str(log), 0, 1 << 20).decode()
        assert "max_total_num_tokens=158983" in text
        families = {f.name: f for f in text_string_to_metric_families(scrape_through_tunnel(sshd, port))}
        assert families["sglang:max_total_num_tokens"].samples[0].value == 158983
        assert "sglang:token_usage" in families
    finally:
        transport.close()
        stop_by_pid_file(pid_file)
    assert "Gracefully exiting... Remaining number of requests 0." in log.read_text()
