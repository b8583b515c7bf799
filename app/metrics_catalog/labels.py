"""What a host series shows, in words, from the catalog: "sum over 4 DP ranks", "max of 8 GPUs"."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kvwatch.app.metrics_catalog.combine import part_kind
from kvwatch.app.metrics_catalog.entries import MetricInfo, Rule, info

PART_NAMES = {"dp": ("DP rank", "DP ranks"), "gpu": ("GPU", "GPUs"), "file": ("output file", "output files")}
RULE_WORDS: dict[Rule, str] = {"sum": "sum over", "max": "max of", "mean": "mean of", "weighted_mean": "mean of"}
AS_LOGGED = "as logged (one series)"


def parts_of(ranks: Sequence[str]) -> tuple[str, int]:
    """The kind of parts a host series combines and how many: GPUs win over ranks over files."""
    kinds = [part_kind(r) for r in ranks]
    for kind in ("gpu", "dp", "file"):
        if kind in kinds:
            return kind, kinds.count(kind)
    return "host", 0


def rule_words(entry: MetricInfo, rule: Rule, kind: str, count: int) -> str:
    singular, plural = PART_NAMES[kind]
    noun = f"{count} {singular if count == 1 else plural}"
    if entry.base is not None and entry.name.endswith("_total"):
        return f"total of {noun}"
    text = f"{RULE_WORDS[rule]} {noun}"
    if rule == "weighted_mean" and entry.weight:
        text += f", weighted by {info(entry.weight).label}"
    return text


def describe(metric: str, ranks: Sequence[str], rank: str = "") -> dict[str, Any]:
    """`combine` for an /api/series answer: rule, what it combines, how many, and the label.

    `ranks` are the stored parts of the metric (of its base series for `_max`/`_total`); `rank` set
    means one part was asked for, which combines nothing."""
    entry = info(metric)
    if rank:
        kind = part_kind(rank)
        return {"rule": "one", "over": kind, "parts": 1, "label": f"{rank} only", "unit": entry.unit}
    kind, count = parts_of(ranks)
    if count == 0:
        return {"rule": "none", "over": "host", "parts": 0, "label": AS_LOGGED, "unit": entry.unit}
    rule = entry.rule_for(kind)
    return {"rule": rule, "over": kind, "parts": count, "label": rule_words(entry, rule, kind, count),
            "unit": entry.unit}


def catalog_help(metric: str, per_part: str = "", unit: str | None = None) -> str:
    """A one-line description for /metrics HELP: label, unit and how the host value combines parts."""
    entry = info(metric)
    unit = entry.unit if unit is None else unit
    shown = f" ({unit})" if unit else ""
    if per_part:
        return f"{entry.label}{shown}, one series per {per_part}"
    ranks, gpus = entry.over_ranks, entry.over_gpus
    words = RULE_WORDS[ranks].split()[0]
    text = f"{entry.label}{shown}; host value: {words} over {PART_NAMES[entry.rank_parts][1]}"
    if gpus != ranks:
        text += f", {RULE_WORDS[gpus].split()[0]} over GPUs"
    return text
