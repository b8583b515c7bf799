"""A config reload's restart controllers: which ones to add, drop or rebuild, and the new set, made
without yanking a restart that is running.

    swap = plan_swap(services.controllers, services.config, config, store)  # ConfigError: nothing changed
    swap.hold()     # ReloadRefused when a controller to replace or drop is restarting its host
    controllers = swap.apply(services.controllers)   # the new set; app/reload.py swaps it in whole

A busy controller refuses the whole reload rather than deferring its host: a reload stays all or
nothing, and a restart takes minutes at most, after which the same SIGHUP applies everything.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from kvwatch.app.config import Config, HostConfig
from kvwatch.app.controller.restart import HostController
from kvwatch.app.controller.wiring import build_controller, controller_configs
from kvwatch.app.errors import KvwatchError
from kvwatch.app.store.base import Store

log = logging.getLogger(__name__)


class ReloadRefused(KvwatchError):
    """The running config stays: applying the new one now would break something under way."""


@dataclass
class ControllerSwap:
    drop: list[str]  # hosts that no longer have a controller
    put: dict[str, HostController]  # new controllers: added hosts, and rebuilt ones
    old: dict[str, HostController]  # the controllers `drop` and `put` replace
    held: list[HostController] = field(default_factory=list)

    def hold(self) -> None:
        """Retire every controller this swap replaces, or none: ReloadRefused names a busy one."""
        for name, controller in self.old.items():
            if not controller.retire():
                self.release()
                raise ReloadRefused(f"host {name!r} is restarting (its controller would be replaced); "
                                    "nothing was applied, send SIGHUP again once the restart is done")
            self.held.append(controller)

    def release(self) -> None:
        for controller in self.held:
            controller.unretire()
        self.held.clear()

    def apply(self, live: Mapping[str, HostController]) -> dict[str, HostController]:
        """The set that follows `live` (which is left as it is): the new controllers take over the last
        operation of those they replace, and the replaced ones let go of their SSH connection."""
        after = {name: controller for name, controller in live.items() if name not in self.drop}
        for name, controller in self.put.items():
            if name in self.old:
                controller.succeed(self.old[name])
            after[name] = controller
        for controller in self.old.values():
            controller.remote.drop()  # its SSH connection: the new controller opens its own
        if self.drop or self.put:
            log.info("controllers after the reload: %s (dropped %s, new or rebuilt %s)", sorted(after) or "none",
                     sorted(self.drop) or "none", sorted(self.put) or "none")
        return after


def plan_swap(live: Mapping[str, HostController], running: Config, config: Config, store: Store) -> ControllerSwap:
    """Compare `live` (built from `running`) with the controllers `config` asks for. A host gets a new
    controller when its controller settings differ (its launch, presets, vetoes, restart table, or the
    shared presets and vetoes) or its connection does; any other change (its alert rules, its client
    log) leaves the controller alone, so it does not get in the way of a reload while it restarts."""
    wanted = controller_configs(config)
    hosts, before = {h.name: h for h in config.hosts}, {h.name: h for h in running.hosts}
    drop = [name for name in live if name not in wanted]
    rebuild = [name for name, parsed in wanted.items()
               if name not in live or live[name].config != parsed
               or name not in before or _connection(before[name]) != _connection(hosts[name])]
    put = {name: build_controller(hosts[name], wanted[name], store) for name in rebuild}
    old = {name: live[name] for name in [*drop, *rebuild] if name in live}
    return ControllerSwap(drop, put, old)


def _connection(host: HostConfig) -> tuple[str, str, str | None, str | None]:
    return host.transport, host.ssh, host.identity_file, host.known_hosts
