"""The controller wired to the rest of kvwatch: the store as AuditSink and RunSink, one HostController
per host that has a `launch`, each on an SSH connection of its own (`HostConfig.open_transport`).

    controllers = build_controllers(config, store)     # in app/build.py, at start
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any

from kvwatch.app.config import Config, HostConfig
from kvwatch.app.config.controller import ControllerConfig
from kvwatch.app.controller.policy import controller_config
from kvwatch.app.controller.restart import HostController
from kvwatch.app.controller.sinks import RestartRecord
from kvwatch.app.diagnosis.accuracy import changes_from, keep_prediction
from kvwatch.app.diagnosis.service import predict_host
from kvwatch.app.flags.schema import FlagValue
from kvwatch.app.runs.registry import current_run, record_controller_run
from kvwatch.app.store.base import Store

RESTART_DOC = "restart"


class StoreSinks:
    """Audit records as store documents of kind "restart"; runs through the run registry."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def record_restart(self, record: RestartRecord) -> None:
        key = f"{record.host}:{record.at:.6f}:{record.operation_id or record.outcome}"
        self.store.put_document(RESTART_DOC, key, record.host, record.at, dataclasses.asdict(record))

    def run_started(self, host: str, flags: dict[str, FlagValue], log_path: str, started_at: float) -> str:
        return record_controller_run(self.store, host, flags, started_at, log_path)

    def run_ended(self, host: str, run_id: str, ended_at: float, reason: str) -> None:
        # The run registry ends a run when the next one starts, and marks failures from the log's own
        # events; the reason is in the restart's audit record.
        return None


class StoreForecast:
    """The restart's prediction from app/diagnosis, kept in the store with the run it starts."""

    def __init__(self, store: Store, host: HostConfig) -> None:
        self.store, self.host = store, host

    def predict(self, from_flags: dict[str, FlagValue], to_flags: dict[str, FlagValue]) -> dict[str, Any] | None:
        return predict_host(self.store, self.host, changes_from(dict(from_flags), dict(to_flags)))

    def keep(self, run_id: str, based_on: str | None, prediction: dict[str, Any]) -> None:
        keep_prediction(self.store, self.host.name, run_id, time.time(), based_on, prediction)


def controller_configs(config: Config) -> dict[str, ControllerConfig]:
    """The controller part of every host with a `launch`."""
    parsed = (controller_config(host, config) for host in config.hosts)
    return {one.host: one for one in parsed if one is not None}


def build_controller(host: HostConfig, parsed: ControllerConfig, store: Store) -> HostController:
    """One host's controller, on an SSH connection of its own (made at its first use)."""
    sinks = StoreSinks(store)
    return HostController(parsed, host.open_transport, sinks, sinks,
                          current_run=functools.partial(current_run, store, host.name),
                          forecast=StoreForecast(store, host))


def build_controllers(config: Config, store: Store) -> dict[str, HostController]:
    """A HostController for every host with a `launch`. Raises ConfigError on a bad controller table."""
    hosts = {h.name: h for h in config.hosts}
    return {name: build_controller(hosts[name], parsed, store) for name, parsed in controller_configs(config).items()}
