"""A host's own series from its parts' samples (DP ranks, GPUs, output files), by the metric catalog.

Each part's latest value is kept per metric; the part samples of one instant emit the host's sample combined
by the catalog's rule over the parts still live (app/metrics_catalog/combine.py decides when a part
went silent), plus the catalog's extra series (`gpu_temp_c_max`: the hottest GPU).
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field

from kvwatch.app.metrics_catalog import MetricInfo, combine, info, live_parts, part_kind, silence_limit
from kvwatch.app.metrics_catalog.combine import FIRST_SILENCE_S
from kvwatch.app.store.base import Sample

INTERVALS_KEPT = 16  # a part's recent logging intervals, for its median
# The intervals are an array of doubles, not a deque of floats: 64 hosts x 8 GPUs x ~10 metrics kept
# ~5,000 of them, 1 kB each as deques and 0.2 kB as arrays (bench/collect_fleet.py, tracemalloc).


@dataclass(slots=True)
class _Parts:
    """One metric's parts: latest value, last time heard, recent intervals, allowed silence."""

    entry: MetricInfo
    latest: dict[str, float] = field(default_factory=dict)
    seen: dict[str, float] = field(default_factory=dict)
    intervals: dict[str, array[float]] = field(default_factory=dict)
    limits: dict[str, float] = field(default_factory=dict)
    next_check: float = math.inf  # no part can be silent before this time: scan only after it

    def observe(self, part: str, t: float, v: float) -> None:
        last = self.seen.get(part)
        limit = self.limits.get(part, FIRST_SILENCE_S)
        if last is not None and t > last:
            intervals = self.intervals.get(part)
            if intervals is None:
                intervals = self.intervals[part] = array("d")
            elif len(intervals) == INTERVALS_KEPT:
                del intervals[0]
            intervals.append(t - last)
            limit = self.limits[part] = silence_limit(intervals)
        heard = t if last is None else max(last, t)
        self.seen[part] = heard
        self.latest[part] = v
        # A shorter limit can bring this part's deadline before the planned check.
        self.next_check = min(self.next_check, heard + limit)

    def drop_silent(self, now: float) -> None:
        """Forget the parts silent past their limit (until they log again); plan the next check.
        Seeded parts, never heard in this process, stay."""
        heard = set(live_parts(self.seen, self.limits, now))
        for part in [p for p in self.seen if p not in heard]:
            del self.seen[part]
            self.latest.pop(part, None)
        self.next_check = min((t + self.limits.get(p, FIRST_SILENCE_S) for p, t in self.seen.items()),
                              default=math.inf)


class RankAggregator:
    """Keeps each part's latest value and time per metric; emits host-level samples on every change."""

    def __init__(self) -> None:
        self._parts: dict[str, _Parts] = {}

    def _of(self, metric: str) -> _Parts:
        parts = self._parts.get(metric)
        if parts is None:
            parts = self._parts[metric] = _Parts(info(metric))
        return parts

    def seed(self, metric: str, rank: str, value: float) -> None:
        """Know a part's value without emitting (an output file already counted before a restart)."""
        self._of(metric).latest[rank] = value

    def host_series(self, metric: str) -> list[tuple[str, str]]:
        """The host's series a part's sample of `metric` combines into (the metric and its extras)."""
        return [(metric, ""), *((f"{metric}_{extra.suffix}", "") for extra in self._of(metric).entry.extras)]

    def host_samples(self, samples: list[Sample]) -> list[Sample]:
        """One host sample per metric and instant: parts sampled at the same time (the 8 GPUs of one
        nvidia-smi tick, the output files read in one pass) are combined once all of them are in, not
        once per part, which would store partial combinations (a mean over 3 new and 5 old GPUs) at
        that instant, for charts and rates to read."""
        out: list[Sample] = []
        instant: dict[str, Sample] = {}  # metric -> its last part sample at the current time
        for sample in samples:
            if not sample.rank:
                continue
            if instant and sample.t != next(iter(instant.values())).t:  # an earlier instant is complete
                out += [host for last in instant.values() for host in self._combined(last)]
                instant = {}
            self._observe(sample)
            instant[sample.metric] = sample
        return out + [host for last in instant.values() for host in self._combined(last)]

    def _observe(self, sample: Sample) -> None:
        parts = self._of(sample.metric)
        parts.observe(sample.rank, sample.t, sample.v)
        if parts.entry.drops_silent and sample.t > parts.next_check:
            parts.drop_silent(sample.t)

    def _combined(self, sample: Sample) -> list[Sample]:
        """The host's values of `sample`'s metric at its time, over the parts' latest values."""
        parts = self._of(sample.metric)
        entry = parts.entry
        values = list(parts.latest.values())
        weights = None
        if entry.weight is not None:
            weigh = self._of(entry.weight).latest
            weights = [weigh.get(p, 0.0) for p in parts.latest]
        rule = entry.rule_for(part_kind(sample.rank))
        out = [Sample(sample.metric, "", sample.t, combine(rule, values, weights))]
        for extra in entry.extras:
            out.append(Sample(f"{sample.metric}_{extra.suffix}", "", sample.t, combine(extra.rule, values)))
        return out
