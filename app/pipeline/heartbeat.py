"""Collection health through the store, so a web app in another process (scale-out) can show it.

Each collecting process writes one `host_health` document per host it owns every few seconds:
the host's health plus the owner (`hostname:pid`). The same documents are the hosts' leases: a
second process that tries to collect a host whose owner is still beating is refused, because two
writers would store every line twice.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kvwatch.app.errors import ConfigError
from kvwatch.app.owners import ended_here, this_owner
from kvwatch.app.pipeline.collector import HostCollector
from kvwatch.app.store.base import Store
from kvwatch.collectors.periodic import Periodic

log = logging.getLogger(__name__)
HEALTH_KIND = "host_health"
INTERVAL_S = 5.0
STALE_AFTER_S = 3 * INTERVAL_S


def owner_alive(owner: str, now: float, beat_t: float, stale_after_s: float = STALE_AFTER_S) -> bool:
    """Does the lease owner `hostname:pid[:nonce]` that last beat at `beat_t` still hold it? A silent
    owner is gone; one on this machine whose process has ended is gone at once (app/owners.py)."""
    return not ended_here(owner) and now - beat_t < stale_after_s


def claim_hosts(store: Store, hosts: Iterable[str], owner: str, now: float | None = None) -> None:
    """Refuse (ConfigError) if another live process is collecting any of `hosts`."""
    now = time.time() if now is None else now
    wanted = set(hosts)
    for doc in store.documents(HEALTH_KIND):
        data, host = doc["data"], doc["host"]
        other = data.get("owner")
        if host not in wanted or not other or other == owner or data.get("state") == "stopped":
            continue
        if owner_alive(other, now, doc["t"]):
            raise ConfigError(
                f"hosts[{host!r}]: already collected by {other} (last heartbeat {now - doc['t']:.0f} s ago); "
                "give each collector its own hosts (kvwatch collect --only NAME,...)"
            )


def stored_health(store: Store, host: str, now: float | None = None) -> dict[str, Any]:
    """The host's health as its collector last wrote it; `stopped` if nobody has beaten lately."""
    now = time.time() if now is None else now
    docs = store.documents(HEALTH_KIND, host)
    if not docs:
        return {"state": "stopped", "last_error": "no collector has reported this host", "sources": {}}
    doc = docs[-1]
    health = dict(doc["data"])
    if health.get("state") != "stopped" and now - doc["t"] > STALE_AFTER_S:
        health["state"] = "stopped"
        health["last_error"] = f"no heartbeat from collector {health.get('owner')} for {now - doc['t']:.0f} s"
    return health


class Heartbeat:
    """Writes every owned host's health every INTERVAL_S seconds, and `stopped` when it stops."""

    def __init__(self, store: Store, collectors: Callable[[], Mapping[str, HostCollector]],
                 interval: float = INTERVAL_S) -> None:
        self.store = store
        self.collectors = collectors
        self.interval = interval
        self.owner = this_owner()
        # a store hiccup must not end the heartbeat; the next beat retries
        self._loop = Periodic("heartbeat", self.beat, interval, first_after=None, failure="cannot write host health")

    def start(self) -> None:
        self.beat()
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()
        self.beat(final=True)

    def beat(self, final: bool = False) -> None:
        now = time.time()
        for name, collector in self.collectors().items():  # read anew: a reload swaps the collectors
            health = collector.health_dict()
            if final:
                health["state"] = "stopped"
            self.store.put_document(HEALTH_KIND, name, name, now, {**health, "owner": self.owner})
