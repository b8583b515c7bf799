"""GET /metrics: current values and collection health in Prometheus text, for a Prometheus scrape.

A custom collector reads the store's latest samples and the collectors' health at scrape time, so
nothing is kept twice. The classic text format is served (promtool lints OpenMetrics output).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from fastapi import APIRouter, Response
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector

from kvwatch.app.api.catalog import host_combine
from kvwatch.app.api.deps import ServicesDep
from kvwatch.app.api.derived import eta
from kvwatch.app.metrics_catalog import catalog_help
from kvwatch.app.metrics_catalog.exposed import EXPOSED
from kvwatch.app.pipeline.heartbeat import stored_health
from kvwatch.app.services import Services

router = APIRouter(tags=["metrics"])

# (store metric, exposed name, help, factor), from the catalog's EXPOSED; help texts (label, unit, how
# the host's parts combine) are the catalog's, so they say the same as the page.
HOST_GAUGES = tuple((e.metric, e.name, catalog_help(e.metric), e.factor) for e in EXPOSED if not e.per_gpu)
GPU_GAUGES = tuple((e.metric, e.name, catalog_help(e.metric, per_part="GPU", unit=e.unit), e.factor)
                   for e in EXPOSED if e.per_gpu)
# Which catalog series /metrics labels with what their host value combines (kvwatch_series_parts).
LABELLED_SERIES = tuple(e.metric for e in EXPOSED)
SOURCE_COUNTERS = (
    ("lines", "kvwatch_source_lines", "Lines read from the source"),
    ("bytes", "kvwatch_source_bytes", "Bytes read from the source"),
    ("records", "kvwatch_source_records", "Records parsed from the source"),
    ("unparsed", "kvwatch_source_unparsed_lines", "Lines of the source no parser understood"),
    ("unknown_keys", "kvwatch_source_unknown_keys", "Logged keys read as no field (never a series)"),
)


class KvwatchCollector(Collector):
    def __init__(self, services: Services) -> None:
        self.services = services

    def collect(self) -> Iterator[Metric]:
        yield from self._values()
        yield self._parts()
        yield from self._gpus()
        yield from self._health()
        yield from self._progress()

    def _values(self) -> Iterator[Metric]:
        store = self.services.store
        for metric, name, help_text, factor in HOST_GAUGES:
            family = GaugeMetricFamily(name, help_text, labels=["host"])
            for host in self.services.config.hosts:
                latest = store.latest(host.name, metric)
                if latest is not None:
                    family.add_metric([host.name], latest[1] * factor)
            yield family
        stamp = GaugeMetricFamily("kvwatch_last_sample_timestamp_seconds",
                                  "Time of the newest stored sample of the host", labels=["host"])
        for host in self.services.config.hosts:
            times = [latest[0] for m, *_ in HOST_GAUGES if (latest := store.latest(host.name, m)) is not None]
            if times:
                stamp.add_metric([host.name], max(times))
        yield stamp

    def _parts(self) -> Metric:
        """How many parts each host series combines, and how, in the catalog's words."""
        family = GaugeMetricFamily("kvwatch_series_parts",
                                   "Parts (DP ranks, GPUs, output files) a host series combines; "
                                   "combine: what the host value is (metric catalog)",
                                   labels=["host", "metric", "combine"])
        for host in self.services.config.hosts:
            for metric in LABELLED_SERIES:
                described = host_combine(self.services.store, host.name, metric)
                if described["parts"]:
                    family.add_metric([host.name, metric, described["label"]], float(described["parts"]))
        return family

    def _gpus(self) -> Iterator[Metric]:
        store = self.services.store
        for metric, name, help_text, factor in GPU_GAUGES:
            family = GaugeMetricFamily(name, help_text, labels=["host", "gpu"])
            for host in self.services.config.hosts:
                for rank in store.ranks(host.name, metric):
                    latest = store.latest(host.name, metric, rank) if rank.startswith("GPU") else None
                    if latest is not None:
                        family.add_metric([host.name, rank.removeprefix("GPU")], latest[1] * factor)
            yield family

    def _health(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("kvwatch_host_up", "1 while the host's collector is connected",
                               labels=["host"])
        reconnects = CounterMetricFamily("kvwatch_host_reconnects", "Reconnect attempts", labels=["host"])
        counters = {key: CounterMetricFamily(name, text, labels=["host", "source"])
                    for key, name, text in SOURCE_COUNTERS}
        age = GaugeMetricFamily("kvwatch_source_last_line_age_seconds",
                                "Seconds since the source's last line", labels=["host", "source"])
        live = self.services.registries  # one read: the hosts and their collectors from the same reload
        for host in live.config.hosts:
            collector = live.collectors.get(host.name)
            health: dict[str, Any] = (
                # A web-only app (scale-out) reports what the host's collector process wrote to the store.
                collector.health.as_dict() if collector else stored_health(self.services.store, host.name)
            )
            up.add_metric([host.name], 1.0 if health["state"] == "up" else 0.0)
            reconnects.add_metric([host.name], float(health.get("reconnects", 0)))
            for source, item in health["sources"].items():
                for key, family in counters.items():
                    # .get: a health stored by an older collector lacks newer counters
                    family.add_metric([host.name, source], float(item.get(key, 0)))
                if item.get("last_line_age_s") is not None:
                    age.add_metric([host.name, source], float(item["last_line_age_s"]))
        yield from (up, reconnects, *counters.values(), age)

    def _progress(self) -> Iterator[Metric]:
        rate = GaugeMetricFamily("kvwatch_completions_per_second", "Recent completion rate", labels=["host"])
        remaining = GaugeMetricFamily("kvwatch_eta_seconds",
                                      "Seconds until target_completions at the recent rate", labels=["host"])
        now = time.time()
        for host in self.services.config.hosts:
            progress = eta(self.services.store, host.name, host.target_completions, now)
            if progress is None:
                continue
            rate.add_metric([host.name], progress["rate_per_s"])
            if progress["eta_s"] is not None:
                remaining.add_metric([host.name], progress["eta_s"])
        yield from (rate, remaining)


@router.get("/metrics", response_class=Response)
def metrics(services: ServicesDep) -> Response:
    """Prometheus text exposition (format 0.0.4)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(KvwatchCollector(services))
    # 0.0.4 is what every Prometheus 2.x scrapes; our names are legacy-valid, so the body is the same.
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_PLAIN_0_0_4)
