"""A host's own series from its parts' samples (DP ranks, GPUs, output files), by the metric catalog.

Each part's latest value is kept per metric; every new part sample emits the host's sample combined
by the catalog's rule over the parts still live (app/metrics_catalog/combine.py decides when a part
went silent), plus the catalog's extra series (`gpu_temp_c_max`: the hottest GPU).
"""

from __future__ import annotations

from collections import deque

from kvwatch.app.metrics_catalog import MetricInfo, combine, info, live_parts, part_kind, silence_limit
from kvwatch.app.store.base import Sample

INTERVALS_KEPT = 16  # a part's recent logging intervals, for its median


class RankAggregator:
    """Keeps each part's latest value and time per metric; emits host-level samples on every change."""

    def __init__(self) -> None:
        self._latest: dict[str, dict[str, float]] = {}
        self._seen: dict[str, dict[str, float]] = {}
        self._intervals: dict[tuple[str, str], deque[float]] = {}

    def seed(self, metric: str, rank: str, value: float) -> None:
        """Know a part's value without emitting (an output file already counted before a restart)."""
        self._latest.setdefault(metric, {})[rank] = value

    def host_samples(self, samples: list[Sample]) -> list[Sample]:
        out: list[Sample] = []
        for sample in samples:
            if sample.rank:
                out.extend(self._host(sample))
        return out

    def _host(self, sample: Sample) -> list[Sample]:
        entry = info(sample.metric)
        self._observe(sample)
        parts = self._live(entry, sample.t)
        latest = self._latest[sample.metric]
        values = [latest[p] for p in parts]
        weights = None
        if entry.weight is not None:
            weigh = self._latest.get(entry.weight, {})
            weights = [weigh.get(p, 0.0) for p in parts]
        rule = entry.rule_for(part_kind(sample.rank))
        out = [Sample(sample.metric, "", sample.t, combine(rule, values, weights))]
        out.extend(Sample(f"{sample.metric}_{extra.suffix}", "", sample.t, combine(extra.rule, values))
                   for extra in entry.extras)
        return out

    def _observe(self, sample: Sample) -> None:
        seen = self._seen.setdefault(sample.metric, {})
        last = seen.get(sample.rank)
        if last is not None and sample.t > last:
            key = (sample.metric, sample.rank)
            self._intervals.setdefault(key, deque(maxlen=INTERVALS_KEPT)).append(sample.t - last)
        seen[sample.rank] = sample.t if last is None else max(last, sample.t)
        self._latest.setdefault(sample.metric, {})[sample.rank] = sample.v

    def _live(self, entry: MetricInfo, now: float) -> list[str]:
        """The metric's parts that count at `now`; silent ones are forgotten until they log again."""
        latest = self._latest[entry.name]
        seen = self._seen.get(entry.name, {})
        if not entry.drops_silent:
            return sorted(latest)
        limits = {p: silence_limit(self._intervals.get((entry.name, p), ())) for p in seen}
        heard = set(live_parts(seen, limits, now))
        for part in [p for p in seen if p not in heard]:
            del seen[part]
            latest.pop(part, None)
        # Seeded parts (never heard in this process) count until they are.
        return sorted(p for p in latest if p in heard or p not in seen)
