"""Every service kvwatch runs, built from a Config in this one place: at start and on a reload.

    services = build_services(config)              # serve, demo, tests: store, registries, helpers
    services = build_services(config, controllers=False, web=False)   # `kvwatch collect`
    change = next_registries(services, config, controllers, collect=True)   # a reload (app/reload.py)

A reload builds the new registries aside (a new collector for an added or changed host, the running
one for an unchanged host) and the caller swaps them in with one assignment (`services.registries =
change.registries`), so a reader sees the old set or the new one, never a half-updated mapping.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kvwatch.app.alerts import validate_alert_config
from kvwatch.app.bus import EventBus
from kvwatch.app.campaign.service import CampaignService
from kvwatch.app.compare.settings import record_min_steady
from kvwatch.app.config import Config, HostConfig
from kvwatch.app.config.files import check_host_files
from kvwatch.app.controller.restart import HostController
from kvwatch.app.controller.wiring import build_controllers
from kvwatch.app.errors import ConfigError
from kvwatch.app.owners import this_owner
from kvwatch.app.pipeline.collector import HostCollector
from kvwatch.app.pipeline.heartbeat import Heartbeat, claim_hosts
from kvwatch.app.pipeline.relay import StoreRelay
from kvwatch.app.pipeline.retention import DAY_S, Retention
from kvwatch.app.services import Registries, Services
from kvwatch.app.store import open_store


def database_path(config: Config) -> str:
    database = config.server.database
    if database.startswith(("postgresql://", "postgres://")) or os.path.isabs(database):
        return database
    return str(Path(config.server.data_dir).expanduser() / database)


def check_config(config: Config) -> None:
    """What parsing leaves to the start (and to a reload): `[alerts]` fields and the hosts' key files.
    A bad one stops the start (refuses the reload) with one line, before anything runs."""
    validate_alert_config(config)
    check_host_files(config)


def build_services(config: Config, collect: bool = True, controllers: bool = True, web: bool = True) -> Services:
    """The store, a collector a host and a restart controller a host with a `launch`, and the helper
    threads; with `collect=False` a web app reading what others collect (no collectors, the relay);
    with `controllers=False` no controllers; with `web=False` (`kvwatch collect`) no page will ever
    subscribe to the bus, so it keeps no replay log."""
    check_config(config)
    bus = EventBus() if web else EventBus(replay_idle_s=0)
    services = Services(config=config, store=open_store(database_path(config)), bus=bus)
    try:
        if collect:
            claim_hosts(services.store, (h.name for h in config.hosts), this_owner())
        record_min_steady(services.store, config, time.time())  # for commands reading the store alone
        made = build_controllers(config, services.store) if controllers else {}
    except ConfigError:
        services.store.close()
        raise
    collectors = {h.name: host_collector(h, services, len(config.hosts)) for h in config.hosts} if collect else {}
    services.registries = Registries(config, collectors, made)
    services.background.extend(_helpers(services, collect))
    if controllers:  # campaigns restart through the controllers, in the process that has them
        services.campaigns = CampaignService(services)
        services.background.append(services.campaigns)
    return services


def _helpers(services: Services, collect: bool) -> list[StoreRelay | Heartbeat | Retention]:
    if not collect:  # a web app over what other processes collect
        return [StoreRelay(services)]
    # Health (and the hosts' leases) in the store, for a web app in another process; read anew each
    # beat, since a reload swaps the collectors.
    helpers: list[StoreRelay | Heartbeat | Retention] = [Heartbeat(services.store, lambda: services.collectors)]
    retention_days = services.config.server.retention_days
    if retention_days is not None:  # the collecting process prunes the hosts it owns
        helpers.append(Retention(services.store, lambda: tuple(services.collectors), retention_days * DAY_S))
    return helpers


def host_collector(host: HostConfig, services: Services, fleet_hosts: int = 1) -> HostCollector:
    """`fleet_hosts`: how many hosts this process collects (an unset `gpu_interval` depends on it)."""
    return HostCollector(host, services.store, services.bus, HostConfig.open_transport, fleet_hosts=fleet_hosts)


@dataclass(frozen=True, slots=True)
class HostChanges:
    """How a new config's hosts differ from the running one's, by name."""

    added: tuple[str, ...]
    changed: tuple[str, ...]  # in both, with a different table
    removed: tuple[str, ...]


def host_changes(running: Config, config: Config) -> HostChanges:
    old = {h.name: h for h in running.hosts}
    new = {h.name: h for h in config.hosts}
    return HostChanges(added=tuple(name for name in new if name not in old),
                       changed=tuple(name for name in new if name in old and new[name] != old[name]),
                       removed=tuple(name for name in old if name not in new))


@dataclass(frozen=True, slots=True)
class RegistryChange:
    """A reload's new registries, and the collectors to stop before they are swapped in and to start
    after (never two collectors of one host at once: both would commit its offsets)."""

    registries: Registries
    stop: tuple[HostCollector, ...]
    start: tuple[HostCollector, ...]


def next_registries(services: Services, config: Config, controllers: Mapping[str, HostController], *,
                    collect: bool) -> RegistryChange:
    """The registries for `config`, built aside from the running ones: an unchanged host keeps its
    collector; an added or changed one gets a new collector (none when `collect` is off: a web app
    over what other processes collect); a removed or changed host's collector is to be stopped."""
    running = services.registries
    hosts = {h.name: h for h in config.hosts}
    changes = host_changes(running.config, config)
    replaced = changes.removed + changes.changed
    stop = tuple(running.collectors[name] for name in replaced if name in running.collectors)
    collectors = {name: c for name, c in running.collectors.items() if name not in replaced}
    fresh = ({name: host_collector(hosts[name], services, len(hosts)) for name in changes.added + changes.changed}
             if collect else {})
    collectors.update(fresh)
    ordered = {name: collectors[name] for name in hosts if name in collectors}  # in the config's order
    return RegistryChange(Registries(config, ordered, controllers), stop, tuple(fresh.values()))
