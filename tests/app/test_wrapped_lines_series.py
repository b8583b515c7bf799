"""Wrapped lines and made-up keys over a real OpenSSH server, read by the app as a host's server log:
every wrapped line is read, no wrapper and no made-up key becomes a series, and the unknown keys are
counted in the source's health that /api/hosts shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from tests.app.slice_helpers import wait_until
from tests.app.test_ssh_slice import ssh_config
from tests.parsers.test_wrappers import SGLANG, wrapped

pytestmark = pytest.mark.sshd
LINES = 10_000


def _write(path: Path, lines: list[str]) -> None:
    with path.open("a") as handle:
        handle.writelines(line + "\n" for line in lines)


def test_wrappers_and_made_up_keys_never_become_series(tmp_path: Path, sshd: Any, serve_app: Any) -> None:
    log = tmp_path / "server.log"
    _write(log, [SGLANG.format(s=n % 60) for n in range(10)])
    services = build_services(ssh_config(tmp_path, sshd))
    services.collectors["gpu1"].interval = 0.05
    server = serve_app(create_app(services))

    def server_log() -> dict[str, Any]:
        hosts = httpx.get(f"{server.url}/api/hosts").json()
        return dict(hosts[0]["sources"].get("server_log", {}))

    wait_until(lambda: server_log().get("records") == 10, timeout=30)
    series = set(services.store.catalog("gpu1"))
    _write(log, [wrapped(n, SGLANG.format(s=n % 60)) for n in range(LINES)])
    wait_until(lambda: server_log().get("records") == 10 + LINES, timeout=120)
    assert set(services.store.catalog("gpu1")) == series
    _write(log, [SGLANG.format(s=n % 60) + f", node {n} pid={n}: 7" for n in range(LINES)])
    wait_until(lambda: server_log().get("records") == 10 + 2 * LINES, timeout=120)
    health = server_log()
    assert health["unknown_keys"] == LINES and health["unparsed"] == 0
    assert set(services.store.catalog("gpu1")) == series
    assert len(services.store.series("gpu1", "running_req")[0]) == 10 + 2 * LINES
