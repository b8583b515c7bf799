"""Entry points: compare runs from a store (JSON, Markdown, CSV), and their overlay series."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
from tsdownsample import MinMaxLTTBDownsampler

from kvwatch.app.compare.render import to_csv, to_markdown
from kvwatch.app.compare.runstats import NOTHING_LEFT, RunStats, compute_run_stats
from kvwatch.app.compare.sources import align_rate_sources
from kvwatch.app.compare.table import ROWS, comparison
from kvwatch.app.config.compare import DEFAULT_MIN_STEADY_S
from kvwatch.app.errors import KvwatchError
from kvwatch.app.runs.model import Run
from kvwatch.app.store.base import Store
from kvwatch.app.store.coverage import read_window

Align = Literal["start", "steady"]
Window = tuple[float, float | None]  # seconds after the run's start; None: to the end


class NothingStored(KvwatchError):
    """None of the compared runs has a sample left, raw or rollup: a table would only say "n/a"."""


def parse_window(text: str) -> tuple[str, Window]:
    """`RUN_ID:FROM:TO` (seconds after the run's start, TO may be empty) -> (run id, window)."""
    try:
        run, low, high = text.rsplit(":", 2)
        window = (float(low or 0), float(high) if high else None)
    except ValueError:
        raise KvwatchError(f"window {text!r}: expected RUN_ID:FROM:TO in seconds after the run's start") from None
    if window[0] < 0 or (window[1] is not None and window[1] <= window[0]):
        raise KvwatchError(f"window {text!r}: FROM must be >= 0 and below TO")
    return run, window


def compare_runs(
    store: Store,
    runs: list[Run],
    baseline: str | None = None,
    windows: dict[str, Window] | None = None,
    min_steady_s: float | Mapping[str, float] = DEFAULT_MIN_STEADY_S,
) -> tuple[list[RunStats], dict[str, Any]]:
    """Each run's steady window and statistics, and the table. `min_steady_s`: one minimum for every
    run, or each host's (app/compare/settings.py), so that a run is judged as its host's `wait` judges it."""
    if not runs:
        raise KvwatchError("compare: no runs to compare")
    ids = [run.id for run in runs]
    if baseline is not None and baseline not in ids:
        raise KvwatchError(f"baseline {baseline!r} is not one of the compared runs ({', '.join(ids)})")
    unknown = set(windows or {}) - set(ids)
    if unknown:
        raise KvwatchError(f"window for {sorted(unknown)[0]!r}: not one of the compared runs")
    stats = [compute_run_stats(store, run, (windows or {}).get(run.id), _minimum(min_steady_s, run)) for run in runs]
    if all(s.window.message == NOTHING_LEFT for s in stats):
        raise NothingStored(f"compare: {', '.join(ids)}: {NOTHING_LEFT}")
    align_rate_sources(store, stats)  # one completion-rate source for every run, where they share one
    return stats, comparison(stats, ids.index(baseline) if baseline else 0)


def unfilled_rows(store: Store, stats: RunStats) -> list[str]:
    """The level and rate rows (capacity rows come from start-up lines, not from a window) that a
    comparison of this run alone would leave empty: what `kvwatch wait --until steady` waits out."""
    if not stats.window.ok:
        return [spec.metric for spec in ROWS if spec.kind != "capacity"]
    align_rate_sources(store, [stats])
    rows = comparison([stats])["rows"]
    return [row["metric"] for row in rows if row["kind"] != "capacity" and row["values"][0] is None]


def _minimum(min_steady_s: float | Mapping[str, float], run: Run) -> float:
    if isinstance(min_steady_s, Mapping):
        return min_steady_s.get(run.host, DEFAULT_MIN_STEADY_S)
    return min_steady_s


def render(result: dict[str, Any], fmt: str) -> str:
    if fmt == "markdown":
        return to_markdown(result)
    if fmt == "csv":
        return to_csv(result)
    raise KvwatchError(f"format {fmt!r}: expected json, markdown or csv")


def overlay(
    store: Store, stats: list[RunStats], metrics: list[str], align: Align = "start", max_points: int = 1000
) -> dict[str, Any]:
    """Each run's series with x in seconds after its start (or after its steady window's start)."""
    series: dict[str, list[dict[str, Any]]] = {}
    for metric in metrics:
        entries = series.setdefault(metric, [])
        for stat in stats:
            run = stat.run
            zero = run.started_at if align == "start" else stat.window.start
            read = read_window(store, run.host, metric, since=run.started_at, until=stat.end)
            t, v = read.t, read.v
            if len(t) > max_points:
                index = MinMaxLTTBDownsampler().downsample(t, v, n_out=max_points)  # type: ignore[no-untyped-call]
                t, v = t[index], v[index]
            points = np.column_stack((t - zero, v)).tolist() if len(t) else []
            entries.append(
                {
                    "run": run.id,
                    "zero": zero,
                    "steady": [stat.window.start - zero, stat.window.end - zero],
                    "points": points,
                    "resolution_s": read.resolution_s,  # 10: pruned part drawn as 10 s bucket means
                }
            )
    return {"align": align, "series": series}
