"""The comparison: rows = metrics, one column per run, change in % against a baseline run, the flag
diff, and a marker where a difference is within noise. This dict is the body of GET /api/compare."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from kvwatch.app.compare.price import price
from kvwatch.app.compare.runstats import RunStats
from kvwatch.app.compare.sources import status_text
from kvwatch.app.compare.stats import Summary, within_noise
from kvwatch.app.metrics_catalog.names import COMPLETION_RATE, GEN_THROUGHPUT, QUEUE_REQ, RUNNING_REQ, TOKEN_USAGE
from kvwatch.app.runs.model import Run
from kvwatch.app.store.coverage import FINEST

RowKind = Literal["capacity", "level", "rate"]
RESOLUTION_RULE = (
    "resolution_s: null = computed from raw samples; 10 = the raw samples of part of the steady window "
    "(rollup_share) were pruned by server.retention_days and that part was read from 10 s rollup "
    "buckets, each as its mean (stored count and sum) held for 10 s. Then: capacity rows stay exact; "
    "completion_rate's value (the mean rate) stays exact to within one bucket at each window edge, "
    "its p5/p95/ci are bucket-based; level rows' median, p5/p95 and ci are statistics of 10 s means, "
    "an approximation (p5/p95 narrower than over raw samples); the steady window is detected on them too."
)
# Values that mean "left at its default" in a label (the flag diff itself keeps them).
LABEL_SKIPS: tuple[object, ...] = (None, False, "auto", "", 0)


@dataclass(frozen=True, slots=True)
class RowSpec:
    metric: str
    label: str  # the column heading of the-run-it-serves.md's table
    kind: RowKind
    unit: str


ROWS = (
    RowSpec("max_total_num_tokens", "GPU KV tokens (max_total_num_tokens)", "capacity", "tokens"),
    RowSpec("max_running_requests", "max running requests", "capacity", "requests"),
    RowSpec(RUNNING_REQ, "concurrent decode reqs", "level", "requests"),
    RowSpec(TOKEN_USAGE, "token usage", "level", "ratio"),
    RowSpec(QUEUE_REQ, "queue", "level", "requests"),
    RowSpec(GEN_THROUGHPUT, "gen tok/s", "level", "tokens/s"),
    RowSpec(COMPLETION_RATE, "completions/s", "rate", "1/s"),
)


def flag_diff(runs: list[Run]) -> list[dict[str, Any]]:
    """Flags whose value is not the same in every run (missing counts as None), in the order logged."""
    names = list(dict.fromkeys(name for run in runs for name in run.flags))
    diff = []
    for name in names:
        values = [run.flags.get(name) for run in runs]
        if any(v != values[0] for v in values[1:]):
            diff.append({"flag": name, "values": values})
    return diff


def config_label(index: int, runs: list[Run], diff: list[dict[str, Any]]) -> str:
    """`--mem-fraction-static 0.88 --enable-hierarchical-cache` from the flags that differ."""
    parts = []
    for entry in diff:
        value = entry["values"][index]
        if value in LABEL_SKIPS:
            continue
        parts.append(f"--{entry['flag']}" if value is True else f"--{entry['flag']} {value}")
    return " ".join(parts) or runs[index].id


def _capacity(stats: RunStats, metric: str) -> float | None:
    value = stats.run.capacity.get(metric)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _summary(stats: RunStats, spec: RowSpec) -> Summary | None:
    return stats.rate if spec.kind == "rate" else stats.levels.get(spec.metric)


def _change(value: float | None, base: float | None) -> float | None:
    if value is None or base is None or base == 0:
        return None
    return (value - base) / abs(base) * 100.0


def build_row(spec: RowSpec, stats: list[RunStats], baseline: int) -> dict[str, Any]:
    if spec.kind == "capacity":
        values = [_capacity(s, spec.metric) for s in stats]
        summaries: list[Summary | None] = [None] * len(stats)
        noise: list[bool | None] = [
            None if v is None or values[baseline] is None else v == values[baseline] for v in values
        ]
        status = ["exact" if v is not None else "unknown" for v in values]
    else:
        summaries = [_summary(s, spec) for s in stats]
        values = [s.value if s is not None else None for s in summaries]
        base = summaries[baseline]
        noise = [within_noise(s, base) if s is not None and base is not None else None for s in summaries]
        status = [
            s.window.status if not s.window.ok else ("steady" if summ is not None else "no_data")
            for s, summ in zip(stats, summaries, strict=True)
        ]
    row: dict[str, Any] = {
        "metric": spec.metric,
        "label": spec.label,
        "unit": spec.unit,
        "kind": spec.kind,
        "values": values,
        "change_pct": [_change(v, values[baseline]) for v in values],
        "within_noise": [None if i == baseline else n for i, n in enumerate(noise)],
        "status": status,
        "p5": [s.p5 if s else None for s in summaries],
        "p95": [s.p95 if s else None for s in summaries],
        "ci": [[s.ci_low, s.ci_high] if s else None for s in summaries],
    }
    row["status_text"] = [
        status_text(st, s.run.state in ("ended", "failed")) if v is None else None
        for st, s, v in zip(status, stats, values, strict=True)
    ]
    if spec.kind == "level":  # the host series each value summarises (app/metrics_catalog)
        row["combine"] = [s.combine.get(spec.metric) for s in stats]
    if spec.kind == "rate":
        _mark_sources(row, stats, baseline)
    _mark_rollup(row, spec, stats, summaries)
    return row


def _mark_sources(row: dict[str, Any], stats: list[RunStats], baseline: int) -> None:
    """`source`: where each run's completions per second come from; `same_source`: one source for all
    (compare picks it: app/compare/sources.py). Across different sources no change is computed: a rate
    from admissions against one from output files compares two different things."""
    sources = [s.rate_source for s in stats]
    known = {source for source in sources if source is not None}
    row["source"] = sources
    row["same_source"] = len(known) <= 1
    if row["same_source"]:
        row["source_note"] = f"every run: {known.pop()}" if known else "no completion count in any run"
        return
    base = sources[baseline]
    for i, source in enumerate(sources):
        if i != baseline and source != base:
            row["change_pct"][i] = None
            row["within_noise"][i] = None
    row["source_note"] = "sources differ (" + ", ".join(f"{s.run.id}: {src or 'none'}" for s, src in zip(
        stats, sources, strict=True)) + "); no change is computed across different sources"


def _mark_rollup(row: dict[str, Any], spec: RowSpec, stats: list[RunStats], summaries: list[Summary | None]) -> None:
    """`resolution_s`: 10 where part of the run's steady window (`rollup_share` of it) was read from
    10 s rollup buckets because retention pruned its raw samples, None where raw samples (or, for
    capacity, the start-up lines) gave it. See RESOLUTION_RULE for which statistics stay exact."""
    shares = [
        s.rollup_share(spec.metric) if summ is not None else 0.0
        for s, summ in zip(stats, summaries, strict=True)
    ]
    row["resolution_s"] = [FINEST if share > 0 else None for share in shares]
    row["rollup_share"] = [round(share, 3) if share > 0 else 0.0 for share in shares]


def run_entry(stats: RunStats, label: str) -> dict[str, Any]:
    run = stats.run
    return {
        **run.as_dict(),
        "label": label,
        "data_end": stats.end,
        "steady": stats.window.as_dict(run.started_at),
        "grid_step_s": stats.step,
        "resolution_s": FINEST if any(stats.rollup_share(m) > 0 for m in stats.rollup_until) else None,
    }


def comparison(stats: list[RunStats], baseline: int = 0) -> dict[str, Any]:
    runs = [s.run for s in stats]
    diff = flag_diff(runs)
    result: dict[str, Any] = {
        "baseline": runs[baseline].id,
        "runs": [run_entry(s, config_label(i, runs, diff)) for i, s in enumerate(stats)],
        "flag_diff": diff,
        "rows": [build_row(spec, stats, baseline) for spec in ROWS],
        "noise_rule": "within_noise: the 95% moving-block-bootstrap interval of the difference to the "
        "baseline contains 0",
        "resolution_rule": RESOLUTION_RULE,
    }
    # The price of each choice in one sentence (`summary`: all of them, `summaries`: one per run).
    result["summaries"] = price(result)
    result["summary"] = " ".join(f"{s['sentence']}." for s in result["summaries"])
    return result
