"""The running alerting: an evaluator thread, the SSE `alert` events and the webhook.

`start_alerting(services)` builds the rules from the config, the engine on the services' store and
bus, the webhook from `[server] webhook`, and starts evaluating every `interval` seconds (1 s: a
state change reaches the page within about a second of the record that caused it being committed).
A config reload calls `reconfigure(config)`: new rules and hosts for the engine, and the new webhook.
Web apps sharing one store take turns through a lease: one evaluates and sends, the others follow.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from kvwatch.app.alerts.delivery import WebhookDelivery
from kvwatch.app.alerts.engine import ALERT_DOC, MAX_MUTE_S, AlertEngine, Change, Mute
from kvwatch.app.alerts.lease import Lease
from kvwatch.app.alerts.listing import RESOLVED_RETENTION_S, sort_alerts, visible
from kvwatch.app.alerts.rules import rules_for_host
from kvwatch.app.alerts.silences import SilenceBook
from kvwatch.app.alerts.state import AlertState
from kvwatch.app.alerts.text import public
from kvwatch.app.config import Config
from kvwatch.app.pipeline.heartbeat import stored_health
from kvwatch.collectors.health import HostHealth
from kvwatch.collectors.periodic import Periodic

if TYPE_CHECKING:
    from kvwatch.app.services import Services

log = logging.getLogger(__name__)
EVALUATE_EVERY_S = 1.0


class AlertService:
    """Evaluates and sends while it holds `lease` (always without one); otherwise follows the states
    the holder stores, so /api/alerts and the live stream of every web app show the same alerts."""

    def __init__(self, engine: AlertEngine, delivery: WebhookDelivery | None, interval: float = EVALUATE_EVERY_S,
                 base_url: str = "", lease: Lease | None = None, webhook: str | None = None):
        self.engine, self.delivery, self.interval = engine, delivery, interval
        self.base_url = base_url  # for a webhook a reload turns on
        self.lease = lease
        self.webhook = delivery.url if delivery is not None else webhook
        self._loop = Periodic("alerts", self._tick, interval, failure="evaluation failed; retrying at the next tick")
        self._restarting: Callable[[str], bool] | None = None
        self._muted_by_restart: set[str] = set()
        # The lease has its own loop, so a slow evaluation never delays a renewal: the holder renews
        # every beat, a follower looks every tick to take a free lease over sooner.
        self._lease_loop = Periodic("alerts-lease", self._beat, self._beat_interval, first_after=None,
                                    failure="lease renewal failed; retrying at the next beat")
        self._adopted_at = float("-inf")
        engine.on_record = self._record
        engine.leading = False

    @property
    def leading(self) -> bool:
        return self.engine.leading

    def start(self) -> None:
        if self.lease is not None:
            # The first beat before the threads start: a lone `serve` evaluates at once, as before leases.
            self.lease.beat()
            self._lease_loop.start()
        self._check_lease()
        self._loop.start()

    def _beat_interval(self) -> float:
        assert self.lease is not None
        return self.lease.beat_s if self.lease.held else min(self.interval, self.lease.beat_s)

    def _beat(self) -> None:
        assert self.lease is not None
        was = self.lease.held
        if self.lease.beat() != was:
            self._loop.wake()  # lead or follow now, not at the next tick

    def _check_lease(self) -> None:
        """Lead or follow as the lease says (always lead without one)."""
        holding = self.lease is None or self.lease.held
        if holding and not self.engine.leading:
            self._lead()
        elif not holding and self.engine.leading:
            self._follow()
        elif holding and self.delivery is not None and self.lease is not None:
            now = time.monotonic()
            if now - self._adopted_at >= self.lease.beat_s:
                self._adopted_at = now
                self.delivery.adopt_pending()  # one a stalled former holder wrote after we took over

    def _lead(self) -> None:
        """Took the lease: carry on from the stored states; send what the outbox still holds."""
        if self.lease is not None:
            self.engine.follow()  # the pages get what the old holder stored since our last look
            self.engine.load()
        self.engine.leading = True
        if self.delivery is None and self.webhook is not None:
            self.delivery = WebhookDelivery(self.webhook, self.engine.store, base_url=self.base_url)
        if self.delivery is not None:
            self.delivery.may_send = self._may_send
            self.delivery.start()

    def _follow(self) -> None:
        """Lost the lease (stalled past it, or the store was unreachable): stop sending at once; what
        was not sent stays pending in the outbox for the holder."""
        self.engine.leading = False
        self.engine.flush_abandon()
        delivery, self.delivery = self.delivery, None
        if delivery is not None:
            delivery.stop(0.5)

    def _may_send(self) -> bool:
        return self.lease is None or self.lease.held

    def _record(self, change: Change) -> None:
        # Into the outbox even if the lease ran out mid-evaluation: its sender then holds the POST
        # back (`may_send`) and the next holder, or this one re-taking the lease, sends it.
        delivery = self.delivery  # read once: a reload may swap it meanwhile
        if self.engine.silences.muted(change.alert.key, self.engine.clock()):
            log.info("alert %s: %s not sent (muted from the page)", change.alert.key, change.alert.state)
            return
        if delivery is not None and self.engine.leading:
            delivery.submit(change)

    def poke(self) -> None:
        """Evaluate now rather than at the next tick (e.g. right after new samples were committed)."""
        self._loop.wake()

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
        if url == self.webhook and url == (current.url if current is not None else url):
            return
        self.webhook = url
        if not self.engine.leading:
            return  # a follower sends nothing; it builds the sender from `webhook` if it takes the lease
        if current is not None and url is not None:
            current.retarget(url)
        elif url is not None:
            started = WebhookDelivery(url, self.engine.store, base_url=self.base_url)
            started.may_send = self._may_send
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
        for loop in (self._loop, self._lease_loop):
            loop.stop(timeout)
        if self.engine.leading:
            self.engine.flush()
        if self.delivery is not None:
            self.delivery.stop(timeout)
        if self.lease is not None:  # after the last write: the next holder starts from all of it
            self.lease.release()

    def _tick(self) -> None:
        self._check_lease()
        self._sync_restarts()
        if self.engine.leading:
            self.engine.evaluate()
        else:
            self.engine.follow()
        changed = self.engine.silences.sync(self.engine.clock())  # another app's, or run out
        if changed:
            self.engine.announce(changed)


def start_alerting(
    services: Services, *, interval: float = EVALUATE_EVERY_S, base_url: str | None = None
) -> AlertService:
    """Build and start alerting for `services`; the caller stops it (before closing the store)."""
    config = services.config
    rules = {host.name: rules_for_host(config, host) for host in config.hosts}
    if base_url is None:
        base_url = f"http://{config.server.host}:{config.server.port}"

    def publish(change: Change) -> None:
        services.bus.publish("alert", change.payload)

    engine = AlertEngine(
        services.store,
        config.hosts,
        rules,
        health=lambda host: _health(services, host),
        on_change=publish,
    )
    # Several web apps on one store: only the lease holder evaluates and sends (see app/alerts/lease.py).
    lease = Lease(services.store)
    service = AlertService(engine, None, interval, base_url, lease=lease, webhook=config.server.webhook)
    service.start()
    return service


def alerts_view(
    services: Services, host: str | None = None, retention_s: float = RESOLVED_RETENTION_S
) -> list[dict[str, Any]]:
    """GET /api/alerts: the running engine's view, or the stored states when alerting is not running."""
    if services.alerts is not None:
        return services.alerts.engine.snapshot(host, retention_s)
    now = time.time()
    # the rules of the hosts asked about only: a fleet asks host by host, and every host's rules for
    # each of 256 hosts was 65,536 rule builds an answer
    rules = {h.name: {r.name: r for r in rules_for_host(services.config, h)} for h in services.config.hosts
             if host is None or h.name == host}
    items = []
    silences = SilenceBook(services.store)
    for doc in services.store.documents(ALERT_DOC, host):
        alert = AlertState.from_dict(doc["data"])
        if visible(alert, now, retention_s) and alert.host in rules:
            items.append(silences.annotate(public(alert, rules[alert.host].get(alert.rule)), now))
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
        series_refused=int((stored.get("dropped") or {}).get("samples", 0)),
    )
