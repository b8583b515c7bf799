"""Pure combination of a host's parts (DP ranks, GPUs, output files) into the host's value, and when
a part counts as silent. No I/O: literal inputs in, numbers out."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

from kvwatch.app.metrics_catalog.entries import Rule

# A part silent for longer than SILENCE_FACTOR of its own median logging interval (never less than
# SILENCE_FLOOR_S: a 0.2 s cadence must not drop a rank over one late line) leaves the host's value.
SILENCE_FACTOR = 3.0
SILENCE_FLOOR_S = 10.0
# Before a part has logged twice its interval is unknown: it may stay silent this long.
FIRST_SILENCE_S = SILENCE_FACTOR * SILENCE_FLOOR_S


@lru_cache(maxsize=4096)  # called for every part sample; a host has few distinct parts
def part_kind(rank: str) -> str:
    """`DP3` -> "dp", `GPU0` -> "gpu", "" -> "host", anything else (an output file's path) -> "file"."""
    for prefix, kind in (("DP", "dp"), ("GPU", "gpu")):
        if rank.startswith(prefix) and rank[len(prefix):].isdigit():
            return kind
    return "host" if not rank else "file"


def combine(rule: Rule, values: Sequence[float], weights: Sequence[float] | None = None) -> float:
    """The host's value of `values` (one per live part) by `rule`; NaN when there is none.

    `weighted_mean` falls back to the plain mean when weights are missing or all zero (every rank
    idle): a mean of the ranks is then the best there is."""
    if not values:
        return math.nan
    if rule == "sum":
        return float(math.fsum(values))
    if rule == "max":
        return float(max(values))
    if rule == "weighted_mean" and weights is not None and len(weights) == len(values):
        total = math.fsum(weights)
        if total > 0:
            return float(math.fsum(v * w for v, w in zip(values, weights, strict=True)) / total)
    return float(math.fsum(values) / len(values))


def silence_limit(intervals: Iterable[float]) -> float:
    """How long a part may stay silent before it drops out, from its recent logging intervals."""
    ordered = sorted(intervals)
    if not ordered:
        return FIRST_SILENCE_S
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return max(SILENCE_FACTOR * median, SILENCE_FLOOR_S)


def live_parts(last_seen: Mapping[str, float], limits: Mapping[str, float], now: float) -> list[str]:
    """The parts heard from within their own silence limit of `now`, in name order."""
    return sorted(p for p, t in last_seen.items() if now - t <= limits.get(p, FIRST_SILENCE_S))
