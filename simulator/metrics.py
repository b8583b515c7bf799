"""`/metrics` in SGLang's names (reference §5.1), read from the engines at scrape time."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kvwatch.simulator import logfmt
from kvwatch.simulator.engine import Engine


def _labels(version: str, model_name: str, dp_rank: int | None) -> dict[str, str]:
    """The scheduler collector's labels for the version (they grew over releases)."""
    labels = {"model_name": model_name}
    if logfmt.at_least(version, "0.4.6"):
        labels["engine_type"] = "unified"
    if logfmt.at_least(version, "0.4.10"):
        labels.update(tp_rank="0", pp_rank="0")
        if dp_rank is not None:
            labels["dp_rank"] = str(dp_rank)
    if logfmt.at_least(version, "0.5.8"):
        labels["moe_ep_rank"] = "0"
    return labels


class EngineCollector(Collector):
    def __init__(self, engines: Sequence[Engine], version: str, model_name: str) -> None:
        self.engines = engines
        self.version = version
        self.model_name = model_name

    def _gauges(self) -> list[tuple[str, str, str]]:
        rows = [
            ("num_running_reqs", "The number of running requests.", "running"),
            ("num_queue_reqs", "The number of requests in the waiting queue.", "queue"),
            ("num_used_tokens", "The number of used tokens.", "used"),
            ("token_usage", "The token usage.", "usage"),
            ("gen_throughput", "The generation throughput (token/s).", "gen"),
            ("cache_hit_rate", "The prefix cache hit rate.", "hit"),
        ]
        if logfmt.at_least(self.version, "0.5.3"):
            rows.append(("num_retracted_reqs", "The number of retracted requests.", "retracted"))
        if logfmt.at_least(self.version, "0.5.8"):
            rows.append(("max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.",
                         "max_total"))
            rows.append(("new_token_ratio", "The new token ratio.", "ratio"))
        return rows

    def _counters(self) -> list[tuple[str, str, str]]:
        rows = [
            ("prompt_tokens", "Number of prefill tokens processed.", "prompt"),
            ("generation_tokens", "Number of generation tokens processed.", "generation"),
        ]
        if logfmt.at_least(self.version, "0.4.6"):
            rows.append(("cached_tokens", "Number of cached prompt tokens.", "cached"))
            rows.append(("num_requests", "Number of requests processed.", "requests"))
        return rows

    @staticmethod
    def _values(engine: Engine) -> dict[str, float]:
        stats = engine.stats
        return {
            "running": len(engine.running), "queue": len(engine.waiting), "used": engine.used,
            "usage": engine.token_usage, "gen": stats.last_gen_throughput,
            "hit": stats.cached_tokens_total / max(stats.prompt_tokens_total, 1),
            "retracted": stats.num_retracted_total, "max_total": engine.cfg.max_total_num_tokens,
            "ratio": engine.ratio, "prompt": stats.prompt_tokens_total,
            "generation": stats.generation_tokens_total, "cached": stats.cached_tokens_total,
            "requests": stats.num_requests_total,
        }

    def collect(self) -> Iterator[Metric]:
        per_engine = [(_labels(self.version, self.model_name, e.cfg.dp_rank), self._values(e))
                      for e in self.engines]
        names = list(per_engine[0][0]) if per_engine else ["model_name"]
        family: GaugeMetricFamily | CounterMetricFamily
        for name, doc, key in self._gauges():
            family = GaugeMetricFamily(f"sglang:{name}", doc, labels=names)
            for labels, values in per_engine:
                family.add_metric([labels[n] for n in names], values[key])
            yield family
        for name, doc, key in self._counters():
            family = CounterMetricFamily(f"sglang:{name}", doc, labels=names)
            for labels, values in per_engine:
                family.add_metric([labels[n] for n in names], values[key])
            yield family


def exposition(engines: Sequence[Engine], version: str, model_name: str) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(EngineCollector(engines, version, model_name))
    return generate_latest(registry)
