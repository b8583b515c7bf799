"""The running alerting: an evaluator thread, the SSE `alert` events and the webhook.

`start_alerting(services)` builds the rules from the config, the engine on the services' store and
bus, the webhook from `[server] webhook`, and starts evaluating every `interval` seconds (1 s: a
state change reaches the page within about a second of the record that caused it being committed).
A config reload calls `reconfigure(config)`: new rules and hosts for the engine, and the new webhook.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from app.alerts.delivery import WebhookDelivery
from app.alerts.engine import (
    ALERT_DOC,
    MAX_MUTE_S,
    RESOLVED_RETENTION_S,
    AlertEngine,
    Change,
    Mute,
    sort_alerts,
    visible,
)
from app.alerts.rules import rules_for_host
from app.alerts.state import AlertState
from app.alerts.text import public
from app.config import Config
from app.pipeline.heartbeat import stored_health
from collectors.health import HostHealth

if TYPE_CHECKING:
    from app.services import Services

log = logging.getLogger(__name__)
EVALUATE_EVERY_S = 1.0


class AlertService:
    def __init__(self, engine: AlertEngine, delivery: WebhookDelivery | None, interval: float = EVALUATE_EVERY_S,
                 base_url: str = ""):
        self.engine, self.delivery, self.interval = engine, delivery, interval
        self.base_url = base_url  # for a webhook a reload turns on
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name="alerts", daemon=True)
        self._restarting: Callable[[str], bool] | None = None
        self._muted_by_restart: set[str] = set()

    def start(self) -> None:
        if self.delivery is not None:
            self.delivery.start()
        self._thread.start()

    def poke(self) -> None:
        """Evaluate now rather than at the next tick (e.g. right after new samples were committed)."""
        self._wake.set()

    def mute(self, host: str, until: float | None = None, reason: str = "controller restart") -> None:
        self.engine.mute(host, until, reason)

    def unmute(self, host: str) -> list[Change]:
        return self.engine.unmute(host)

    def muted(self, host: str) -> Mute | None:
        return self.engine.muted(host)

    @contextmanager
    def muting(self, host: str, reason: str = "controller restart", max_s: float = MAX_MUTE_S) -> Iterator[None]:
        """`with alerts.muting(host):` around a server restart; re-armed however the block ends."""
        self.engine.mute(host, self.engine.clock() + max_s, reason)
        try:
            yield
        finally:
            self.engine.unmute(host)

    def deliver(self, change: Change) -> None:
        delivery = self.delivery  # read once: a reload may swap it meanwhile
        if delivery is not None:
            delivery.submit(change)

    def reconfigure(self, config: Config) -> list[Change]:
        """Apply a reloaded config: every host's rules rebuilt from it (see AlertEngine.reconfigure)
        and `[server] webhook` followed; returns the changes it made (removed hosts' alerts ending)."""
        rules = {host.name: rules_for_host(config, host) for host in config.hosts}
        self._muted_by_restart &= {host.name for host in config.hosts}
        self._follow_webhook(config.server.webhook)
        return self.engine.reconfigure(config.hosts, rules)

    def _follow_webhook(self, url: str | None) -> None:
        """A changed URL is used from the next attempt on (messages not yet sent go there too); a new
        one starts a sender; a removed one stops it, leaving what was unsent in the outbox."""
        current = self.delivery
        if url == (current.url if current is not None else None):
            return
        if current is not None and url is not None:
            current.retarget(url)
        elif url is not None:
            started = WebhookDelivery(url, self.engine.store, base_url=self.base_url)
            started.start()
            self.delivery = started
        elif current is not None:
            self.delivery = None
            current.stop()
        log.info("webhook %s after the reload", self.delivery.target if self.delivery is not None else "off")

    def follow_restarts(self, restarting: Callable[[str], bool]) -> None:
        """Mute each host while `restarting(host)` is true and re-arm it once it is false again: the
        controller's `HostController.busy`, checked before every evaluation."""
        self._restarting = restarting

    def _sync_restarts(self) -> None:
        if self._restarting is None:
            return
        for host in self.engine.hosts:
            busy = self._restarting(host)
            if busy and self.engine.muted(host) is None:
                self.engine.mute(host, reason="controller restart")
                self._muted_by_restart.add(host)
            elif not busy and host in self._muted_by_restart:
                self._muted_by_restart.discard(host)
                self.engine.unmute(host)

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        self.engine.flush()
        if self.delivery is not None:
            self.delivery.stop(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._sync_restarts()
                self.engine.evaluate()
            except Exception:  # the boundary: a store hiccup must not end alerting for good
                log.exception("alert evaluation failed; retrying at the next tick")
            self._wake.wait(self.interval)
            self._wake.clear()


def start_alerting(
    services: Services, *, interval: float = EVALUATE_EVERY_S, base_url: str | None = None
) -> AlertService:
    """Build and start alerting for `services`; the caller stops it (before closing the store)."""
    config = services.config
    rules = {host.name: rules_for_host(config, host) for host in config.hosts}
    if base_url is None:
        base_url = f"http://{config.server.host}:{config.server.port}"
    webhook = config.server.webhook
    delivery = WebhookDelivery(webhook, services.store, base_url=base_url) if webhook else None

    def publish(change: Change) -> None:
        services.bus.publish("alert", change.payload)
        service.deliver(change)

    engine = AlertEngine(
        services.store,
        config.hosts,
        rules,
        health=lambda host: _health(services, host),
        on_change=publish,
    )
    service = AlertService(engine, delivery, interval, base_url)
    service.start()
    return service


def alerts_view(
    services: Services, host: str | None = None, retention_s: float = RESOLVED_RETENTION_S
) -> list[dict[str, Any]]:
    """GET /api/alerts: the running engine's view, or the stored states when alerting is not running."""
    if services.alerts is not None:
        return services.alerts.engine.snapshot(host, retention_s)
    now = time.time()
    rules = {h.name: {r.name: r for r in rules_for_host(services.config, h)} for h in services.config.hosts}
    items = []
    for doc in services.store.documents(ALERT_DOC, host):
        alert = AlertState.from_dict(doc["data"])
        if visible(alert, now, retention_s) and alert.host in rules:
            items.append(public(alert, rules[alert.host].get(alert.rule)))
    return sort_alerts(items)


def _health(services: Services, host: str) -> HostHealth | None:
    """The collector's health in this process, else what the host's collector process last stored
    (a web-only app in a scale-out set-up)."""
    collector = services.collectors.get(host)
    if collector is not None:
        return collector.health
    stored = stored_health(services.store, host)
    return HostHealth(
        state=stored.get("state", "stopped"),
        last_error=stored.get("last_error"),
        since=float(stored.get("since") or time.time()),
    )
