"""What the web app serves from: the store, the live bus, and the hosts' registries.

The registries (the config, and the collectors and restart controllers built from it) are one frozen
value, `Registries`, that a reload replaces whole with one assignment (app/build.py builds it, at
start and on reload). A reader that takes `services.registries` once sees the old set or the new
one, never a mix; the mappings in it are read-only views, so nobody can edit a set in place.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol

from kvwatch.app.bus import EventBus
from kvwatch.app.config import Config
from kvwatch.app.pipeline.collector import HostCollector, stop_all
from kvwatch.app.pipeline.switching import fit_switch_interval
from kvwatch.app.store.base import Store

if TYPE_CHECKING:
    from kvwatch.app.alerts.service import AlertService
    from kvwatch.app.campaign.service import CampaignService
    from kvwatch.app.controller.restart import HostController


class Background(Protocol):
    """A helper thread with the app's lifetime: the store heartbeat, or the store relay."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Registries:
    """A config and what was built from it for its hosts: a collector for every host this process
    collects, a controller for every host with a `launch`. Both mappings are frozen copies."""

    config: Config
    collectors: Mapping[str, HostCollector] = field(default_factory=dict)
    controllers: Mapping[str, HostController] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "collectors", MappingProxyType(dict(self.collectors)))
        object.__setattr__(self, "controllers", MappingProxyType(dict(self.controllers)))


class Services:
    def __init__(self, config: Config, store: Store, bus: EventBus | None = None) -> None:
        self.store = store
        self.bus = bus or EventBus()
        self.registries = Registries(config)  # replaced whole (app/build.py), never edited
        self.started_at = time.time()
        self.alerts: AlertService | None = None  # set by the app's lifespan (app.alerts.start_alerting)
        self.background: list[Background] = []
        self.campaigns: CampaignService | None = None  # with controllers (app/build.py)

    @property
    def config(self) -> Config:
        return self.registries.config

    @config.setter
    def config(self, config: Config) -> None:
        self.registries = dataclasses.replace(self.registries, config=config)

    @property
    def collectors(self) -> Mapping[str, HostCollector]:
        return self.registries.collectors

    @property
    def controllers(self) -> Mapping[str, HostController]:
        """Hosts with a `launch`: what the restart API and the alert mutes read."""
        return self.registries.controllers

    def start_collectors(self) -> None:
        fit_switch_interval(len(self.collectors))
        for collector in self.collectors.values():
            collector.start()
        for helper in self.background:
            helper.start()

    def stop(self) -> None:
        if self.alerts is not None:  # before the store closes: it flushes alert states into it
            self.alerts.stop()
            self.alerts = None
        stop_all(self.collectors.values())
        # After the collectors (the heartbeat's last word is their final state), before the store closes.
        for helper in self.background:
            helper.stop()
        self.store.close()
