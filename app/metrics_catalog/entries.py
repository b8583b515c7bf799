"""The metric catalog: what each stored series is, in which unit, and how a host's value combines
its parts (DP ranks, GPUs, output files); which chart draws it is charts.py's. Every layer reads it
from here: the pipeline's aggregation, /api/series, /api/catalog, /metrics, export and compare.

Rules (issue #16): counts and rates sum; usage is the fullest rank's (max); acceptance length and
acceptance rates are means, weighted by the rank's running requests where it logs them; GPU
temperature and utilisation are per GPU, the host showing the mean and (as `<name>_max`) the hottest
GPU, never a sum; GPU memory is per GPU (the fullest GPU's), its total a separate `<name>_total`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from kvwatch.app.metrics_catalog.charts import chart_of
from kvwatch.app.metrics_catalog.names import COMPLETION_RATE, COMPLETIONS

Rule = Literal["sum", "max", "mean", "weighted_mean"]
# "interval": sampled while its source reports (a log line, a GPU sample), so a long silence is a hole
# in what we know; "on_change": a sample only when the value changes (an output file's line count), so
# between two samples it held the first one's value - the page draws it as steps, never broken.
Sampling = Literal["interval", "on_change"]
RULES: tuple[Rule, ...] = ("sum", "max", "mean", "weighted_mean")


@dataclass(frozen=True, slots=True)
class Extra:
    """A second host series derived from the same parts: `gpu_temp_c_max` = hottest GPU."""

    suffix: str
    rule: Rule


@dataclass(frozen=True, slots=True)
class MetricInfo:
    name: str
    unit: str
    label: str
    over_ranks: Rule  # DP ranks and output files
    over_gpus: Rule
    weight: str | None = None  # the part's metric that weighs a weighted mean (its latest value)
    extras: tuple[Extra, ...] = ()
    # Cumulative counts (an output file's lines) stay in the sum when they stop growing; everything
    # else drops a part that went silent (an idle DP rank stops logging).
    drops_silent: bool = True
    base: str | None = None  # an extra's own entry names the series it is derived from
    known: bool = True  # False: not in the catalog, rule guessed from the name
    rank_parts: str = "dp"  # what `over_ranks` combines: DP ranks, or output files ("file")
    sampling: Sampling = "interval"

    @property
    def chart(self) -> str | None:
        """The page's chart that draws it (charts.py's CHARTS), None: not drawn."""
        return chart_of(self.name)

    def rule_for(self, part_kind: str) -> Rule:
        return self.over_gpus if part_kind == "gpu" else self.over_ranks

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["extras"] = [f"{self.name}_{e.suffix}" for e in self.extras]
        out["chart"] = self.chart
        return out


def _e(name: str, unit: str, label: str, rule: Rule, **kw: Any) -> MetricInfo:
    return MetricInfo(name, unit, label, over_ranks=kw.pop("over_ranks", rule),
                      over_gpus=kw.pop("over_gpus", rule), **kw)


_ACCEPT = {"weight": "running_req"}
_PER_GPU_HOT = (Extra("max", "max"),)
_PER_GPU_TOTAL = (Extra("total", "sum"),)

_ENTRIES: tuple[MetricInfo, ...] = (
    # A hybrid model's lines log each pool; its token_usage and token are SGLang's own totals of them
    # (the fullest pool; parsers/sglang.py).
    _e("token_usage", "ratio", "KV token usage", "max"),
    _e("full_token_usage", "ratio", "full-attention token usage", "max"),
    _e("swa_token_usage", "ratio", "sliding-window token usage", "max"),
    _e("mamba_usage", "ratio", "mamba state usage", "max"),
    _e("pre_allocated_usage", "ratio", "pre-allocated usage", "max"),
    _e("cpu_token_usage", "ratio", "CPU KV token usage", "max"),
    _e("running_req", "requests", "running requests", "sum"),
    _e("queue_req", "requests", "queued requests", "sum"),
    _e("swapped_req", "requests", "swapped requests", "sum"),
    _e("gen_throughput", "tokens/s", "gen throughput", "sum"),
    _e("input_throughput", "tokens/s", "input throughput", "sum"),
    _e("token", "tokens", "KV tokens in use", "sum"),
    _e("full_token", "tokens", "full-attention tokens in use", "sum"),
    _e("swa_token", "tokens", "sliding-window tokens in use", "sum"),
    _e("mamba_num", "requests", "mamba state slots in use", "sum"),
    _e("new_seq", "requests", "admitted requests (prefill #new-seq)", "sum"),
    _e("new_token", "tokens", "prefill new tokens", "sum"),
    _e("cached_token", "tokens", "prefill cached tokens", "sum"),
    _e("accept_len", "tokens/step", "speculative acceptance length", "weighted_mean", **_ACCEPT),
    _e("block_accept_len", "tokens/step", "block acceptance length", "weighted_mean", **_ACCEPT),
    _e("accept_rate", "ratio", "speculative acceptance rate", "weighted_mean", **_ACCEPT),
    _e("prefix_cache_hit_rate", "ratio", "prefix cache hit rate", "mean"),
    _e(COMPLETIONS, "requests", "completions (output file lines)", "sum",
       drops_silent=False, rank_parts="file", sampling="on_change"),
    _e(COMPLETION_RATE, "1/s", "completions per second", "sum", drops_silent=False,
       rank_parts="file"),
    _e("client_done", "requests", "client progress: done", "sum", drops_silent=False),
    _e("client_total", "requests", "client progress: total", "sum", drops_silent=False),
    _e("gpu_util_pct", "%", "GPU utilisation", "mean", extras=_PER_GPU_HOT),
    _e("gpu_temp_c", "°C", "GPU temperature", "mean", extras=_PER_GPU_HOT),
    _e("gpu_mem_used_mib", "MiB", "GPU memory used (per GPU)", "max", extras=_PER_GPU_TOTAL),
    _e("gpu_mem_total_mib", "MiB", "GPU memory (per GPU)", "max", extras=_PER_GPU_TOTAL),
    _e("gpu_power_w", "W", "GPU power draw", "sum"),
)
_EXTRA_LABELS = {"max": "hottest GPU", "total": "total"}


def _with_extras(entries: tuple[MetricInfo, ...]) -> dict[str, MetricInfo]:
    out = {e.name: e for e in entries}
    for entry in entries:
        for extra in entry.extras:
            name = f"{entry.name}_{extra.suffix}"
            label = f"{entry.label.removesuffix(' (per GPU)')}, {_EXTRA_LABELS[extra.suffix]}"
            out[name] = MetricInfo(name, entry.unit, label, extra.rule, extra.rule, base=entry.name)
    return out


CATALOG: dict[str, MetricInfo] = _with_extras(_ENTRIES)
GUESS_MEAN_SUFFIXES = ("_pct", "_c", "_len", "accept_rate", "hit_rate")
GUESS_MAX_SUFFIXES = ("usage",)


def info(metric: str) -> MetricInfo:
    """The catalog's entry; for a name it does not list, a guess from the name, marked `known=False`."""
    found = CATALOG.get(metric)
    if found is not None:
        return found
    rule: Rule = "sum"
    if metric.endswith(GUESS_MAX_SUFFIXES):
        rule = "max"
    elif metric.endswith(GUESS_MEAN_SUFFIXES) or metric.startswith("gpu_"):
        rule = "mean"
    return MetricInfo(metric, "", metric.replace("_", " "), rule, rule, known=False)
