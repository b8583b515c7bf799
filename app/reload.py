"""Reload kvwatch.toml in a running `kvwatch serve` or `kvwatch collect` (SIGHUP): all or nothing.

The new file is read and checked like at start. Any error is logged as its one line and the running
config stays as it was. A good file applies its host changes: removed hosts stop collecting, added
hosts start, a host whose table changed is restarted with the new table. Collected data is never
touched: a restarted collector resumes each file from its committed offset.

The new registries (config, collectors, controllers) are built aside (app/build.py) and swapped in
with one assignment: a request handler or the alert service reading them during a reload sees the
old set or the new one, never a mix.

In `serve` the reload is complete: alerting takes the new hosts, `[alerts]` tables and webhook
(AlertService.reconfigure), and the restart controllers follow (app.controller.swap). A controller in
the middle of a restart refuses the whole reload. Server settings other than the webhook need a
restart: a changed one is named in one log line and kept.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable

from kvwatch.app.build import check_config, host_changes, next_registries
from kvwatch.app.compare.settings import record_min_steady
from kvwatch.app.config import Config, ServerConfig, load_config
from kvwatch.app.controller.swap import ControllerSwap, plan_swap
from kvwatch.app.errors import KvwatchError
from kvwatch.app.owners import this_owner
from kvwatch.app.pipeline.collector import stop_all
from kvwatch.app.pipeline.heartbeat import claim_hosts
from kvwatch.app.pipeline.switching import fit_switch_interval
from kvwatch.app.services import Services

log = logging.getLogger(__name__)
LIVE_SERVER_KEYS = frozenset({"webhook"})  # the [server] keys a reload applies; the rest need a restart


class ConfigReloader:
    def __init__(self, services: Services, path: str, narrow: Callable[[Config], Config] | None = None,
                 controllers: bool = False, collect: bool = True) -> None:
        self.services, self.path = services, path
        self.collect = collect  # False: `serve --no-collect`, a web app over what other processes collect
        self.narrow = narrow or (lambda config: config)  # `collect --only`: this process's share of the hosts
        self.controllers = controllers  # `serve`: the restart controllers follow the hosts too
        self.reloads = 0
        self.failures = 0
        self._lock = threading.Lock()

    def reload(self) -> bool:
        """True when the new config was applied; False (logged) when the old one stays."""
        with self._lock:
            try:
                config = self.narrow(load_config(self.path))
                check_config(config)
                self._apply(config)
            except KvwatchError as exc:
                self.failures += 1
                log.error("reload refused, keeping the running config: %s", exc)
                return False
            self.reloads += 1
            log.info("reloaded %s: %d hosts", self.path, len(config.hosts))
            return True

    def _apply(self, config: Config) -> None:
        running = self.services.registries
        swap = self._plan_controllers(config)  # everything that can refuse comes before any change
        record_min_steady(self.services.store, config, time.time())
        if self.collect:
            claim_hosts(self.services.store, host_changes(running.config, config).added, this_owner())
        controllers = running.controllers
        if swap is not None:
            swap.hold()
            controllers = swap.apply(running.controllers)
        config = config.model_copy(update={"server": self._server(config.server)})
        change = next_registries(self.services, config, controllers, collect=self.collect)
        stop_all(change.stop)  # first: a changed host's new collector resumes from its offsets
        self.services.registries = change.registries  # the one swap readers see
        if self.collect:
            fit_switch_interval(len(self.services.collectors))
        for collector in change.start:
            collector.start()
        if self.services.alerts is not None:  # after the collectors: an added host has its health at once
            self.services.alerts.reconfigure(self.services.config)

    def _plan_controllers(self, config: Config) -> ControllerSwap | None:
        if not self.controllers:
            return None
        return plan_swap(self.services.controllers, self.services.config, config, self.services.store)

    def _server(self, new: ServerConfig) -> ServerConfig:
        """The running [server] settings with the live ones taken from `new`; one line names the rest
        that changed (by key only: token and webhook are secrets)."""
        running = self.services.config.server
        kept = [key for key in ServerConfig.model_fields
                if key not in LIVE_SERVER_KEYS and getattr(new, key) != getattr(running, key)]
        if kept:
            log.warning("reload: %s changed but not applied (needs a restart of kvwatch)",
                        ", ".join(f"server.{key}" for key in kept))
        # validated values of the same model: copying them needs no new validation
        return running.model_copy(update={key: getattr(new, key) for key in LIVE_SERVER_KEYS})

    def install(self) -> None:
        """Reload on SIGHUP, in a thread of its own (a signal handler must not block)."""

        def on_hup(signum: int, frame: object) -> None:
            threading.Thread(target=self.reload, name="kvwatch-reload", daemon=True).start()

        signal.signal(signal.SIGHUP, on_hup)
