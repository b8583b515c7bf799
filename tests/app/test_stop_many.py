"""Stopping a process that collects many hosts: every host's loop is asked to end first, then each is
waited for, so the stop takes about one poll interval, not one a host (256 hosts stopped one by one
took about a minute: each loop first waits out its current wake-up wait)."""

from __future__ import annotations

import time
from pathlib import Path

from kvwatch.app.build import build_services
from kvwatch.app.config import load_config

HOSTS = 40


def test_stopping_40_hosts_takes_about_one_poll_interval(tmp_path: Path) -> None:
    (tmp_path / "server.log").write_text("")
    tables = "".join(f"[[hosts]]\nname = 'h{i}'\nssh = 'local'\nserver_log = '{tmp_path / 'server.log'}'\n"
                     for i in range(HOSTS))
    config_path = tmp_path / "kvwatch.toml"
    config_path.write_text(f"[server]\ndata_dir = '{tmp_path}'\n{tables}")
    services = build_services(load_config(config_path), controllers=False)
    services.start_collectors()
    deadline = time.monotonic() + 30
    while not all(c.health.state == "up" for c in services.collectors.values()):
        assert time.monotonic() < deadline, "the hosts never came up"
        time.sleep(0.05)
    time.sleep(1.0)  # every loop in its wake-up wait
    started = time.monotonic()
    services.stop()
    took = time.monotonic() - started
    assert all(c.health.state == "stopped" and not c.is_alive() for c in services.collectors.values())
    # one by one: 40 waits of up to 0.5 s (about 10 s); all at once: one wait and the closes
    assert took < 4.0, took
