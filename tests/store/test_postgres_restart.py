"""Issue #22, finding 8 (PostgreSQL): a PostgreSQL restart during collection loses and doubles nothing.

The real local collector follows a log that a writer keeps appending numbered decode lines to, into a
database of the real temp cluster. PostgreSQL is stopped (`pg_ctl -m fast`: every session cut) while
lines keep coming, stays down for a few seconds, and is started again. The held batches are committed
once it is back, and every line's sample is stored exactly once. Meanwhile the API answers 503 (not
a 500 with a traceback), and 200 again once the server is back."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
from fastapi.testclient import TestClient

from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from kvwatch.app.store.postgres import WAIT_S
from tests.app.slice_helpers import append_lines, wait_until
from tests.fixtures.postgres import PgCluster

LINES, EVERY_S = 2000, 0.01


def test_a_postgres_restart_during_collection_stores_every_line_once(
    tmp_path: Path, pg_cluster: PgCluster, pg_url: str
) -> None:
    log = tmp_path / "server.log"
    log.touch()
    host = HostConfig(name="local", ssh="local", server_log=str(log))
    services = build_services(Config(server=ServerConfig(data_dir=str(tmp_path), database=pg_url), hosts=(host,)))
    for collector in services.collectors.values():
        collector.interval = 0.05
    store = services.store

    def write() -> None:
        for n in range(1, LINES + 1):
            append_lines(log, n, 1)
            time.sleep(EVERY_S)

    writer = threading.Thread(target=write)
    stopped = False
    try:
        services.start_collectors()
        writer.start()
        wait_until(lambda: len(store.series("local", "running_req")[0]) >= 150, timeout=30)
        pg_cluster.stop()
        stopped = True
        query = {"host": "local", "metric": "running_req"}
        with TestClient(create_app(services, manage_collectors=False)) as client:
            started = time.monotonic()
            down = client.get("/api/series", params=query)  # lines keep coming; the collector holds its batch
            waited = time.monotonic() - started
            assert down.status_code == 503 and down.headers["retry-after"] == "5"
            assert "PostgreSQL unreachable" in down.json()["detail"] and waited < WAIT_S + 5
            assert writer.is_alive(), "the restart must happen while lines are still being written"
            # The hosts are still listed, and say that the store holds what they collect back.
            wait_until(lambda: client.get("/api/hosts").json()[0]["store"]["state"] == "unreachable",
                       timeout=WAIT_S + 10)
            hosts = client.get("/api/hosts")
            assert hosts.status_code == 200
            entry = hosts.json()[0]
            assert entry["name"] == "local" and entry["store"]["held_batches"] == 1 and entry["metrics"] is None
            assert entry["store"]["since"] <= time.time()
            pg_cluster.start()
            stopped = False
            assert client.get("/api/series", params=query).status_code == 200
            wait_until(lambda: client.get("/api/hosts").json()[0]["store"] == {"state": "ok"}, timeout=30)
        writer.join(60)
        wait_until(lambda: len(store.series("local", "running_req")[0]) >= LINES, timeout=60)
        time.sleep(1.0)  # a duplicate would land after the count is reached
        _, running = store.series("local", "running_req")
        assert len(running) == LINES, f"{len(running)} samples for {LINES} lines"
        assert np.array_equal(np.sort(running), np.arange(1, LINES + 1, dtype=np.float64))
        assert services.collectors["local"].health.as_dict()["state"] == "up"
    finally:
        if stopped:
            pg_cluster.start()
        writer.join(60)
        services.stop()
