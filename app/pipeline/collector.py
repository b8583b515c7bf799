"""A host as `kvwatch serve`/`collect`/`demo` collect it: the one host loop with the store sink.

`HostCollector` is `collectors.host.HostFollower` (connect, back off, follow files, GPUs, /metrics;
one thread per host, so a failing host only affects its own thread) built from a configured host:
what to follow, how often, and `StoreSink` (parse, commit with offsets, publish) as its sink.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from kvwatch.app.bus import EventBus
from kvwatch.app.config import HostConfig
from kvwatch.app.config.controller import ControllerConfig
from kvwatch.app.pipeline.sink import StoreSink
from kvwatch.app.runs.logs import run_log_path
from kvwatch.app.store.base import Store
from kvwatch.collectors.backoff import Backoff
from kvwatch.collectors.base import Transport
from kvwatch.collectors.health import HostHealth
from kvwatch.collectors.host import HostFollower, HostOptions, SourceSpec

METRICS_EVERY_S = 5.0
# GPU samples are stored in one transaction per this many seconds, not per second: a commit's cost
# is mostly per transaction, and 64 hosts x 8 GPUs committed every second was the largest part of
# the collector's CPU (bench/collect_fleet.py; every 5 s: 66-92 -> 29-33 ms CPU a second).
GPU_EVERY_S = 5.0
# A host's GPUs are sampled every `gpu_interval` seconds when its table says so; unset, every second,
# except in a process collecting more than FLEET_GPU_HOSTS hosts: there every FLEET_GPU_SAMPLE_S. GPU rows
# are four in five of what a host stores, and at 256 hosts 1-s samples kept a line's append->stored p95 at
# 1.4-1.7 s against 0.65-0.93 s with 5-s samples (bench/collect_fleet.py, BENCHMARKS.md).
GPU_SAMPLE_S = 1.0
FLEET_GPU_SAMPLE_S = 5.0
FLEET_GPU_HOSTS = 64
# Globs (new output folders, a controller restart's new log) are re-expanded this often, not every
# round: over SSH each expansion is SFTP listings and stats, and 64 hosts waking on every appended
# line made that most of the collector's CPU and of its latency (bench/collect_fleet.py).
DISCOVER_EVERY_S = 5.0


def gpu_sample_s(host: HostConfig, fleet_hosts: int) -> float:
    """How often `host`'s GPUs are sampled in a process collecting `fleet_hosts` hosts."""
    if "gpu_interval" in host.model_fields_set:
        return host.gpu_interval
    return FLEET_GPU_SAMPLE_S if fleet_hosts > FLEET_GPU_HOSTS else GPU_SAMPLE_S


def stop_all(collectors: Iterable[HostCollector]) -> None:
    """Stop every collector: all are asked first, then each is waited for. One by one, each waited out its
    loop's current wake-up wait (up to a poll interval): 256 hosts took about a minute, now 0.5 s."""
    collectors = tuple(collectors)
    for collector in collectors:
        collector.request_stop()
    for collector in collectors:
        collector.stop()


class HostCollector(HostFollower):
    """The host loop with the store sink, its health published on the bus as it changes."""

    sink: StoreSink

    def __init__(
        self,
        host: HostConfig,
        store: Store,
        bus: EventBus,
        open_transport: Callable[[HostConfig], Transport],
        interval: float = 0.5,
        backoff: Backoff | None = None,
        fleet_hosts: int = 1,
    ) -> None:
        self.host = host
        self.store = store
        self.bus = bus
        options = HostOptions(poll_interval=interval, glob_interval=DISCOVER_EVERY_S, gpu=host.gpu,
                              metrics_port=host.metrics_port, metrics_interval=METRICS_EVERY_S,
                              gpu_interval=GPU_EVERY_S, gpu_sample_s=gpu_sample_s(host, fleet_hosts))
        super().__init__(host.name, lambda: open_transport(host), host_sources(host),
                         StoreSink(host.name, store, bus, timezone=host.timezone), options, backoff,
                         on_health=self._publish_health)
        self.sink.live.bounds.on_refused = self._series_refused

    def _series_refused(self, samples: int) -> None:
        self.health.series_refused += samples

    def health_dict(self) -> dict[str, Any]:
        """Health as /api/hosts and the heartbeat show it, with what the pipeline's bounds dropped and
        the stamps it quarantined (app/pipeline/watermark.py)."""
        live = self.sink.live
        return {**self.health.as_dict(), "dropped": live.bounds.as_dict(), "stamps": live.stamps.as_dict()}

    @property
    def interval(self) -> float:
        return self.options.poll_interval

    @interval.setter
    def interval(self, seconds: float) -> None:
        self.options = dataclasses.replace(self.options, poll_interval=seconds)

    def stop(self, timeout: float = 5.0) -> None:
        # The app stops its collectors one after another (shutdown, reload): a hung host holds that
        # up for 5 s, not the bare loop's 10.
        super().stop(timeout)

    def _publish_health(self, health: HostHealth) -> None:
        self.bus.publish("host", {"host": self.host.name, **health.as_dict()})


def host_sources(host: HostConfig) -> list[SourceSpec]:
    """What to follow on a configured host."""
    sources = [SourceSpec("server_log", host.server_log)]
    if host.launch:  # every controller restart logs to a new file: follow those too
        sources.append(SourceSpec("server_log", _run_logs(host), glob=True))
    if host.client_log:
        sources.append(SourceSpec("client_log", host.client_log))
    sources.extend(SourceSpec("outputs", pattern) for pattern in host.outputs)
    return sources


def _run_logs(host: HostConfig) -> str:
    """Where the controller's restarts log: the directory its own config works out (one rule)."""
    controller = ControllerConfig(host=host.name, launch=host.launch or "", server_log=host.server_log,
                                  restart=host.restart)
    return run_log_path(controller.log_dir, host.name, "*")
