"""What the web app serves from: the store, the live bus, the configured hosts and their collectors."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from kvwatch.app.bus import EventBus
from kvwatch.app.config import Config
from kvwatch.app.pipeline.collector import HostCollector
from kvwatch.app.store.base import Store

if TYPE_CHECKING:
    from kvwatch.app.alerts.service import AlertService
    from kvwatch.app.controller.restart import HostController


class Background(Protocol):
    """A helper thread with the app's lifetime: the store heartbeat, or the store relay."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


@dataclass
class Services:
    config: Config
    store: Store
    bus: EventBus = field(default_factory=EventBus)
    collectors: dict[str, HostCollector] = field(default_factory=dict)
    started_at: float = field(default_factory=time.time)
    alerts: AlertService | None = None  # set by the app's lifespan (app.alerts.start_alerting)
    controllers: dict[str, HostController] = field(default_factory=dict)  # hosts with a `launch`
    background: list[Background] = field(default_factory=list)

    def start_collectors(self) -> None:
        for collector in self.collectors.values():
            collector.start()
        for helper in self.background:
            helper.start()

    def stop(self) -> None:
        if self.alerts is not None:  # before the store closes: it flushes alert states into it
            self.alerts.stop()
            self.alerts = None
        for collector in self.collectors.values():
            collector.stop()
        # After the collectors (the heartbeat's last word is their final state), before the store closes.
        for helper in self.background:
            helper.stop()
        self.store.close()
