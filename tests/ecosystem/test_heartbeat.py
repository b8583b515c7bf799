"""Host health and leases through the store (scale-out), on a real SQLite store."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kvwatch.app.errors import ConfigError
from kvwatch.app.pipeline.heartbeat import HEALTH_KIND, STALE_AFTER_S, claim_hosts, stored_health
from kvwatch.app.store.sqlite import SqliteStore

NOW = 1_800_000_000.0


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(str(tmp_path / "kvwatch.db"))


def beat(store: SqliteStore, host: str, owner: str, t: float, state: str = "up", **extra: object) -> None:
    store.put_document(HEALTH_KIND, host, host, t, {"state": state, "owner": owner, "sources": {}, **extra})


def test_a_live_foreign_collector_keeps_its_hosts(store: SqliteStore) -> None:
    beat(store, "gpu1", "box-b:4242", NOW - 2)
    with pytest.raises(ConfigError, match=r"hosts\['gpu1'\]: already collected by box-b:4242"):
        claim_hosts(store, ["gpu1", "gpu2"], "box-a:1", now=NOW)
    claim_hosts(store, ["gpu2"], "box-a:1", now=NOW)  # other hosts are free


@pytest.mark.parametrize(
    ("owner", "age", "state"),
    [
        ("box-b:4242", STALE_AFTER_S + 1, "up"),  # silent for too long: crashed or partitioned
        ("box-b:4242", 1, "stopped"),  # stopped cleanly: released
        ("box-a:1", 1, "up"),  # our own lease (a restart with the same hostname and pid, as in a container)
    ],
)
def test_a_lease_is_free_when(store: SqliteStore, owner: str, age: float, state: str) -> None:
    beat(store, "gpu1", owner, NOW - age, state)
    claim_hosts(store, ["gpu1"], "box-a:1", now=NOW)


def test_a_dead_process_on_this_machine_frees_its_lease_at_once(store: SqliteStore) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    beat(store, "gpu1", f"{socket.gethostname()}:{gone.stdout.strip()}", NOW - 1)
    claim_hosts(store, ["gpu1"], "box-a:1", now=NOW)


def test_a_reused_pid_on_this_machine_does_not_hold_a_silent_lease(store: SqliteStore) -> None:
    """The pid is alive (this very test process) but the collector that wrote it stopped beating: a
    pid reused after a crash must not keep the host locked forever."""
    owner = f"{socket.gethostname()}:{os.getpid()}"
    beat(store, "gpu1", owner, NOW - STALE_AFTER_S - 1)
    claim_hosts(store, ["gpu1"], "box-a:1", now=NOW)
    beat(store, "gpu1", owner, NOW - 1)  # while it beats, it is alive
    with pytest.raises(ConfigError, match="already collected"):
        claim_hosts(store, ["gpu1"], "box-a:1", now=NOW)


def test_the_web_app_sees_stored_health_and_its_staleness(store: SqliteStore) -> None:
    assert stored_health(store, "gpu1", NOW)["state"] == "stopped"  # never reported
    beat(store, "gpu1", "box-b:4242", NOW - 1, "reconnecting", last_error="connection refused", reconnects=3)
    health = stored_health(store, "gpu1", NOW)
    assert (health["state"], health["last_error"], health["reconnects"]) == ("reconnecting", "connection refused", 3)
    late = stored_health(store, "gpu1", NOW + STALE_AFTER_S + 5)
    assert late["state"] == "stopped" and "no heartbeat from collector box-b:4242" in late["last_error"]


@pytest.mark.parametrize(
    ("database", "logged"),
    [
        ("postgresql://kv:s3cret@db.internal:5432/kvwatch", "postgresql://kv@db.internal:5432/kvwatch"),
        ("postgresql://kv@db.internal/kvwatch", "postgresql://kv@db.internal/kvwatch"),
        ("/data/kvwatch.db", "/data/kvwatch.db"),
    ],
)
def test_a_collector_never_logs_the_database_password(database: str, logged: str) -> None:
    from kvwatch.app.runner import redacted

    assert redacted(database) == logged
