"""The host's series from its ranks over a whole backlog batch at once: RankAggregator's rule in arrays.

Live, the part samples of one instant emit the host's value combined (catalog rule) over each live part's
latest value. Here, for one metric, the parts' samples are merged in arrival order, each part's
latest value and last-heard time at every position are forward-filled (a matrix, positions x parts,
starting from the aggregator's carried state), parts silent past their limit are masked out, and
the rule is applied along the parts axis. A part's allowed silence is the one it had at the start of
the batch, or from its intervals within it when it had none. Afterwards the aggregator is brought to
where the per-line path would leave it, so the live path continues seamlessly.
"""

from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from kvwatch.app.metrics_catalog import part_kind, silence_limit
from kvwatch.app.metrics_catalog.combine import FIRST_SILENCE_S
from kvwatch.app.metrics_catalog.entries import Rule
from kvwatch.app.pipeline.aggregate import INTERVALS_KEPT, RankAggregator
from kvwatch.app.store.chunks import SeriesColumns

F64 = npt.NDArray[np.float64]


class PartSeries(NamedTuple):
    col: SeriesColumns  # one part's (rank's) samples of one metric
    seq: npt.NDArray[np.int64]  # their positions in the batch's arrival order


def _positions(parts: list[PartSeries], at: npt.NDArray[np.int64]) -> list[npt.NDArray[np.intp]]:
    """Per part, the index of its latest sample at or before each position (-1: none yet)."""
    return [np.searchsorted(part.seq, at, side="right") - 1 for part in parts]


def _latest_at(parts: list[PartSeries], initial: list[float], idx: list[npt.NDArray[np.intp]],
               t: bool = False) -> F64:
    """Matrix (positions x parts): each part's latest value (or time) at the positions `idx` was taken
    for; a part's `initial` before its first sample."""
    out = np.empty((len(idx[0]), len(parts)), dtype=np.float64)
    for j, part in enumerate(parts):
        src = part.col.t if t else part.col.v
        out[:, j] = np.where(idx[j] >= 0, src[np.maximum(idx[j], 0)], initial[j])
    return out


def _apply(rule: Rule, values: F64, weights: F64 | None) -> F64:
    """`combine` along the parts axis; NaN marks a part absent or silent."""
    present = ~np.isnan(values)
    count = present.sum(axis=1)
    zeroed = np.where(present, values, 0.0)
    total = zeroed.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        if rule == "sum":
            out = total
        elif rule == "max":
            out = np.where(present, values, -np.inf).max(axis=1)
        else:
            out = total / count
            if rule == "weighted_mean" and weights is not None:
                w = np.where(present, np.nan_to_num(weights), 0.0)
                wsum = w.sum(axis=1)
                out = np.where(wsum > 0, (zeroed * w).sum(axis=1) / np.where(wsum > 0, wsum, 1.0), out)
    return np.where(count > 0, out, np.nan)


def _combine_metric(aggregator: RankAggregator, metric: str, parts: list[PartSeries],
                    weight_parts: list[PartSeries] | None) -> list[SeriesColumns]:
    state = aggregator._of(metric)
    names = [p.col.rank for p in parts]
    seq = np.concatenate([p.seq for p in parts])
    order = np.argsort(seq, kind="stable")
    at, t = seq[order], np.concatenate([p.col.t for p in parts])[order]
    idx = _positions(parts, at)
    values = _latest_at(parts, [state.latest.get(n, np.nan) for n in names], idx)
    if state.entry.drops_silent:
        # a part never heard in this process (seeded) stays: its last heard time counts as +inf
        heard = _latest_at(parts, [state.seen.get(n, np.inf if n in state.latest else -np.inf) for n in names],
                           idx, t=True)
        heard = np.maximum.accumulate(heard, axis=0)
        limits = np.array([state.limits.get(n, _batch_limit(p.col.t)) for n, p in zip(names, parts, strict=True)])
        values = np.where(t[:, None] - heard <= limits[None, :], values, np.nan)
    weights = None
    if state.entry.weight is not None:
        weigh = aggregator._of(state.entry.weight).latest
        by_rank = {p.col.rank: p for p in weight_parts or []}
        weights = np.column_stack([_weight_of(by_rank.get(n), weigh.get(n, 0.0), at) for n in names])
    rule = state.entry.rule_for(part_kind(names[0]))
    out = [SeriesColumns(metric, "", t, _apply(rule, values, weights))]
    out.extend(SeriesColumns(f"{metric}_{extra.suffix}", "", t, _apply(extra.rule, values, None))
               for extra in state.entry.extras)
    _carry(aggregator, metric, parts)
    return out


def _weight_of(part: PartSeries | None, initial: float, at: npt.NDArray[np.int64]) -> F64:
    if part is None:
        return np.full(len(at), initial)
    return _latest_at([part], [initial], _positions([part], at))[:, 0]


def _batch_limit(t: F64) -> float:
    return silence_limit(np.diff(t)[-INTERVALS_KEPT:].tolist()) if len(t) > 1 else FIRST_SILENCE_S


def _carry(aggregator: RankAggregator, metric: str, parts: list[PartSeries]) -> None:
    """Replay each part's last samples so latest, intervals and limits end where per-line would."""
    state = aggregator._of(metric)
    for part in parts:
        tail = slice(-(INTERVALS_KEPT + 1), None)
        for t, v in zip(part.col.t[tail].tolist(), part.col.v[tail].tolist(), strict=True):
            state.observe(part.col.rank, t, v)
    if state.entry.drops_silent and parts:
        state.drop_silent(max(float(p.col.t[-1]) for p in parts))


def combine_batch(aggregator: RankAggregator, parts: list[PartSeries]) -> list[SeriesColumns]:
    """The host-level series (and the catalog's extras) of every metric the batch has parts of."""
    by_metric: dict[str, list[PartSeries]] = defaultdict(list)
    for part in parts:
        if len(part.col.t):
            by_metric[part.col.metric].append(part)
    # a weighted mean reads its weight metric's values as they were: combine weighted metrics first
    weighted = sorted(by_metric, key=lambda m: aggregator._of(m).entry.weight is None)
    out: list[SeriesColumns] = []
    for metric in weighted:
        weight = aggregator._of(metric).entry.weight
        out.extend(_combine_metric(aggregator, metric, by_metric[metric], by_metric.get(weight or "")))
    return out
