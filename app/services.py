"""What the web app serves from: the store, the live bus, the configured hosts and their collectors."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from app.bus import EventBus
from app.config import Config
from app.pipeline.collector import HostCollector
from app.store.base import Store


@dataclass
class Services:
    config: Config
    store: Store
    bus: EventBus = field(default_factory=EventBus)
    collectors: dict[str, HostCollector] = field(default_factory=dict)
    started_at: float = field(default_factory=time.time)

    def start_collectors(self) -> None:
        for collector in self.collectors.values():
            collector.start()

    def stop(self) -> None:
        for collector in self.collectors.values():
            collector.stop()
        self.store.close()
