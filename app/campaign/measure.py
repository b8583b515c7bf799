"""A step's numbers: the compare code's steady window and statistics of the step's run, scored."""

from __future__ import annotations

from typing import Any

from kvwatch.app.campaign.model import Plan, Step
from kvwatch.app.compare.runstats import RunStats, compute_run_stats
from kvwatch.app.diagnosis.accuracy import relative_error
from kvwatch.app.metrics_catalog.names import COMPLETION_RATE, GEN_THROUGHPUT, QUEUE_REQ, RUNNING_REQ, TOKEN_USAGE
from kvwatch.app.runs.model import Run
from kvwatch.app.store.base import Store

LEVELS = (GEN_THROUGHPUT, RUNNING_REQ, QUEUE_REQ, TOKEN_USAGE)


def steady_stats(store: Store, run: Run, min_steady_s: float, second_half: bool = False) -> RunStats:
    """The compare code's steady window of `run`; `second_half`: the run's second half, set by hand."""
    if not second_half:
        return compute_run_stats(store, run, None, min_steady_s)
    latest = [found[0] for m in LEVELS if (found := store.latest(run.host, m)) is not None]
    length = max(max(latest, default=run.started_at) - run.started_at, 0.0)
    return compute_run_stats(store, run, (length / 2, None), min_steady_s)


def numbers(run: Run, stats: RunStats) -> dict[str, Any]:
    """The run's KV tokens and its steady medians (None where the window gives none)."""
    tokens = run.capacity.get("max_total_num_tokens")
    out: dict[str, Any] = {"max_total_num_tokens": tokens if isinstance(tokens, int | float) else None}
    for metric in LEVELS:
        summary = stats.levels.get(metric)
        out[metric] = round(summary.value, 3) if summary is not None else None
    out[COMPLETION_RATE] = round(stats.rate.value, 4) if stats.rate is not None else None
    out["window"] = {"status": stats.window.status, "start": stats.window.start, "end": stats.window.end,
                     "duration_s": stats.window.duration, "message": stats.window.message}
    return out


def score(step: Step, plan: Plan, measured: dict[str, Any]) -> None:
    """Fill the step's measurement, its KV tokens' error against the prediction, and its score."""
    step.measured = measured
    predicted = (step.prediction or {}).get("max_total_num_tokens")
    step.kv_error = relative_error(predicted, measured.get("max_total_num_tokens"))
    over = []
    queue, usage = measured.get(QUEUE_REQ), measured.get(TOKEN_USAGE)
    if plan.max_queue is not None and isinstance(queue, int | float) and queue > plan.max_queue:
        over.append(f"queue {queue:.0f} above the limit {plan.max_queue:g}")
    if plan.max_usage is not None and isinstance(usage, int | float) and usage > plan.max_usage:
        over.append(f"token usage {usage:.2f} above the limit {plan.max_usage:g}")
    step.within_limits = not over
    value = measured.get(plan.objective)
    step.score = float(value) if isinstance(value, int | float) and not over else None
    step.reason = "; ".join(over)


def better(candidate: Step, best: Step | None) -> bool:
    return candidate.score is not None and (best is None or best.score is None or candidate.score > best.score)
