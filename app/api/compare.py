"""GET /api/compare: runs side by side on their steady state (JSON, Markdown or CSV).

JSON body: `runs` (each run of /api/runs plus `label`, `steady`: the window used, absolute and as
offsets from the run's start, `status` steady|settling|too_short|no_data, `auto`, `message`), `baseline`,
`flag_diff` ([{flag, values}]), `rows` ([{metric, label, unit, values, change_pct, within_noise, status,
p5, p95, ci, resolution_s, rollup_share}], one entry per run in each list; `resolution_s` 10 where
retention pruned the raw samples and part of the steady window (`rollup_share`) came from 10 s rollup
buckets, with `resolution_rule` saying which statistics stay exact). With `overlay=M,M`: `overlay` = {align, series: {M:
[{run, zero, steady: [from, to], points: [[seconds after zero, v], ...]}]}}, where zero is the run's
start (`align=start`) or its steady window's start (`align=steady`): what the overlay chart draws.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import PlainTextResponse

from kvwatch.app.api.deps import ServicesDep
from kvwatch.app.compare import DEFAULT_MIN_STEADY_S, compare_runs, overlay, parse_window, render
from kvwatch.app.compare.settings import min_steady_by_host
from kvwatch.app.errors import KvwatchError
from kvwatch.app.runs import find_runs

router = APIRouter(tags=["compare"])
MEDIA = {"markdown": "text/markdown; charset=utf-8", "csv": "text/csv; charset=utf-8"}


@router.get("/api/compare", response_model=None)
def get_compare(
    services: ServicesDep,
    runs: Annotated[str, Query(description="run ids, comma-separated")],
    baseline: str | None = None,
    format: Literal["json", "markdown", "csv"] = "json",
    window: Annotated[list[str] | None, Query(description="RUN_ID:FROM:TO, seconds after start")] = None,
    min_steady: Annotated[float | None, Query(ge=0, description="seconds; default: the host's")] = None,
    overlay_metrics: Annotated[str | None, Query(alias="overlay")] = None,
    align: Literal["start", "steady"] = "start",
    max_points: Annotated[int, Query(ge=3, le=100_000)] = 1000,
) -> dict[str, Any] | PlainTextResponse:
    ids = [i.strip() for i in runs.split(",") if i.strip()]
    chosen = find_runs(services.store, [h.name for h in services.config.hosts], ids)
    if not chosen:
        raise KvwatchError("runs: name at least two run ids (GET /api/runs lists them)")
    windows = dict(parse_window(w) for w in window or [])
    minimums = min_steady_by_host(services.store, {r.host for r in chosen}, services.config, min_steady)
    stats, result = compare_runs(services.store, chosen, baseline, windows, minimums)
    # the first run's host's minimum: the one the page shows (and sends back changed)
    result["min_steady_s"], result["default_min_steady_s"] = minimums[chosen[0].host], DEFAULT_MIN_STEADY_S
    if format != "json":
        return PlainTextResponse(render(result, format), media_type=MEDIA[format])
    if overlay_metrics:
        metrics = [m.strip() for m in overlay_metrics.split(",") if m.strip()]
        result["overlay"] = overlay(services.store, stats, metrics, align, max_points)
    return result
