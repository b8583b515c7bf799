"""The vertical slice over a real OpenSSH server: remote file -> SSH tail -> parser -> store -> API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from tests.app.slice_helpers import append_lines, wait_until

pytestmark = pytest.mark.sshd


def ssh_config(tmp: Path, sshd: Any, known_hosts: str | None = None) -> Config:
    host = HostConfig(
        name="gpu1", ssh=sshd.spec, identity_file=sshd.key_path,
        known_hosts=known_hosts or sshd.known_hosts_path, server_log=str(tmp / "server.log"),
    )
    return Config(server=ServerConfig(data_dir=str(tmp)), hosts=(host,))


def test_remote_lines_reach_the_api(tmp_path: Path, sshd: Any, serve_app: Any) -> None:
    append_lines(tmp_path / "server.log", 1, 40)
    services = build_services(ssh_config(tmp_path, sshd))
    services.collectors["gpu1"].interval = 0.05
    server = serve_app(create_app(services))
    wait_until(lambda: len(services.store.series("gpu1", "running_req")[0]) == 40, timeout=20)
    append_lines(tmp_path / "server.log", 41, 5)
    wait_until(lambda: len(services.store.series("gpu1", "running_req")[0]) == 45, timeout=20)
    series = httpx.get(f"{server.url}/api/series", params={"host": "gpu1", "metric": "running_req"}).json()
    assert [v for _, v in series["points"]] == [float(n) for n in range(1, 46)]
    hosts = httpx.get(f"{server.url}/api/hosts").json()
    assert hosts[0]["state"] == "up"


def test_unknown_host_key_is_refused_and_not_retried(tmp_path: Path, sshd: Any) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    append_lines(tmp_path / "server.log", 1, 3)
    services = build_services(ssh_config(tmp_path, sshd, known_hosts=str(empty)))
    services.start_collectors()
    try:
        collector = services.collectors["gpu1"]
        wait_until(lambda: collector.health.state == "failed", timeout=20)
        assert "host key rejected" in (collector.health.last_error or "")
        assert collector.health.reconnects == 0
        assert len(services.store.series("gpu1", "running_req")[0]) == 0
    finally:
        services.stop()


def test_the_app_collector_survives_rotation_and_a_dropped_connection(tmp_path: Path, sshd: Any) -> None:
    """The app's own path (HostCollector: the host loop with the parsing store sink) over real sshd:
    a rename rotation and a dropped SSH session while lines keep coming; every decode line becomes
    exactly one stored sample, and the source's health counts the rotation and the reconnect."""
    import os
    import signal
    import time

    log = tmp_path / "server.log"
    append_lines(log, 1, 100)
    services = build_services(ssh_config(tmp_path, sshd))
    collector = services.collectors["gpu1"]
    collector.interval = 0.05
    services.start_collectors()
    try:
        running = lambda: services.store.series("gpu1", "running_req")[0]  # noqa: E731
        wait_until(lambda: len(running()) == 100, timeout=20)
        log.rename(tmp_path / "server.log.1")
        append_lines(tmp_path / "server.log.1", 101, 50)  # the writer still holds the old file
        append_lines(log, 151, 50)
        wait_until(lambda: len(running()) == 200, timeout=20)
        for pid in sshd.session_pids():
            os.kill(pid, signal.SIGKILL)
        append_lines(log, 201, 100)
        wait_until(lambda: collector.health.reconnects >= 1 and collector.health.state == "up", timeout=20)
        wait_until(lambda: len(running()) == 300, timeout=20)
        time.sleep(0.5)  # nothing arrives twice later either
        values = sorted(services.store.series("gpu1", "running_req")[1])
        assert values == [float(n) for n in range(1, 301)]
        server = collector.health.as_dict()["sources"]["server_log"]
        assert server["rotations"] == 1
        assert server["records"] == 300 and server["unparsed"] == 0
        assert server["bytes"] == (tmp_path / "server.log.1").stat().st_size + log.stat().st_size
    finally:
        services.stop()
