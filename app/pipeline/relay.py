"""For a web app that collects nothing itself (`kvwatch serve --no-collect`): what other processes
write into the shared store is read back every few seconds and published on the live bus, in the
same shapes the in-process collectors publish, so the page works the same in both set-ups.

Samples are followed by their own timestamps per (host, metric), starting after the newest one
stored when the relay first sees the series, so a GPU host's clock skew does not matter. A sample
stored late with an older timestamp than one already relayed (a catch-up after a reconnect) reaches
the page on its next history load, not live.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Protocol

from kvwatch.app.bus import EventBus
from kvwatch.app.config import Config
from kvwatch.app.pipeline.heartbeat import stored_health
from kvwatch.app.store.base import Store
from kvwatch.collectors.periodic import Periodic

log = logging.getLogger(__name__)
RUN_EVENT_KINDS = ("capacity", "server_args", "event")
METRICS_REFRESH_S = 30.0


class Relayed(Protocol):
    """What the relay reads each round (app.services.Services is one): read anew every poll, since a
    reload swaps the config."""

    config: Config
    store: Store
    bus: EventBus


class StoreRelay:
    def __init__(self, services: Relayed, interval: float = 2.0) -> None:
        self.services = services
        self.interval = interval
        self._last_t: dict[tuple[str, str], float] = {}
        self._last_event_t: dict[str, float] = {}
        self._first_round = True
        self._last_state: dict[str, Any] = {}
        self._metrics: dict[str, list[str]] = {}
        self._metrics_at = 0.0
        # the store may be briefly unreachable; the next poll catches up
        self._loop = Periodic("store-relay", self.poll, interval, failure="cannot read the shared store")

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def poll(self) -> None:
        """One round: new samples, run events and health changes of every configured host."""
        store = self.services.store
        if time.time() - self._metrics_at > METRICS_REFRESH_S:
            self._metrics = {h.name: store.metrics(h.name) for h in self.services.config.hosts}
            self._metrics_at = time.time()
        for host in self.services.config.hosts:
            if self._first_round:  # what is already stored is history: the page loads it itself
                self._skip_history(host.name)
            self._relay_samples(host.name)
            self._relay_events(host.name)
            self._relay_health(host.name)
        self._first_round = False

    def _skip_history(self, host: str) -> None:
        store = self.services.store
        for metric in self._metrics.get(host, []):
            latest = store.latest(host, metric)
            self._last_t[(host, metric)] = latest[0] if latest is not None else float("-inf")
        newest = store.events(host, kinds=RUN_EVENT_KINDS, limit=1)
        self._last_event_t[host] = float(newest[-1]["t"]) if newest else float("-inf")

    def _relay_samples(self, host: str) -> None:
        points: dict[str, list[list[float]]] = {}
        for metric in self._metrics.get(host, []):
            # A metric that appears after the first round is new: all of it is relayed.
            since = self._last_t.get((host, metric))
            t, v = self.services.store.series(host, metric, since=_finite(since))
            if len(t):
                points[metric] = [[float(a), float(b)] for a, b in zip(t, v, strict=True)]
                self._last_t[(host, metric)] = float(t[-1])
        if points:
            self.services.bus.publish("sample", {"host": host, "points": points})

    def _relay_events(self, host: str) -> None:
        since = self._last_event_t.get(host)
        for event in self.services.store.events(host, kinds=RUN_EVENT_KINDS, since=_finite(since)):
            kind = event["kind"]
            self.services.bus.publish("run" if kind != "event" else "event", event)
            self._last_event_t[host] = float(event["t"])

    def _relay_health(self, host: str) -> None:
        health = stored_health(self.services.store, host)
        state = (health.get("state"), health.get("last_error"))
        if self._last_state.get(host) != state:
            self._last_state[host] = state
            self.services.bus.publish("host", {"host": host, **health})


def _finite(t: float | None) -> float | None:
    """`since` for the store: None (from the beginning) instead of an unknown or -inf cursor."""
    return None if t is None or t == float("-inf") else t
