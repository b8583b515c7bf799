"""GET /api/series: one metric of one host (or one rank), downsampled on the server, extremes kept.

Wide windows read the rollup buckets instead of every raw sample (see app/store/rollup.py), so a
month at 1 Hz costs a few thousand rows. `completion_rate` is derived from `completions`.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query

from kvwatch.app.api.catalog import host_combine
from kvwatch.app.api.deps import ServicesDep, require_host
from kvwatch.app.api.derived import RATE_WINDOW_S, drop_unobserved, eta, stored_run_starts, trailing_rate
from kvwatch.app.api.points import as_pairs, downsample, read_points, run_window
from kvwatch.app.metrics_catalog import info
from kvwatch.app.metrics_catalog.names import COMPLETION_RATE, COMPLETIONS
from kvwatch.app.pipeline.batches import CATCHUP_EVENT
from kvwatch.app.services import Services

router = APIRouter(tags=["series"])
DEFAULT_MAX_POINTS = 2000
DERIVED = {COMPLETION_RATE: COMPLETIONS}


@router.get("/api/series")
def get_series(
    services: ServicesDep,
    host: str,
    metric: str,
    since: float | None = None,
    until: float | None = None,
    run: str | None = None,
    rank: str = "",
    gpu: Annotated[int | None, Query(ge=0)] = None,
    max_points: Annotated[int, Query(ge=3, le=100_000)] = DEFAULT_MAX_POINTS,
) -> dict[str, Any]:
    """Points `[t, v]` (t in epoch seconds) in (`since`, `until`], at most `max_points` of them.

    `run` limits the window to that run; `rank` (`DP3`, `GPU0`) or `gpu` (N: `GPU<N>`) picks one
    part instead of the host's aggregate. `combine` and `label` say, from the metric catalog, what
    the series shows ("sum over 4 DP ranks", "max of 8 GPUs", "DP3 only"); `unit` its unit.
    Completion series also carry `eta` (done, rate, seconds to the target).
    """
    require_host(services, host)
    if gpu is not None:
        rank = f"GPU{gpu}"
    if run is not None:
        start, end = run_window(services.store, host, run)
        since = start if since is None else max(since, start)
        until = end if until is None else (until if end is None else min(until, end))
    if since is not None and until is not None and until <= since:
        raise HTTPException(status_code=422, detail="until must be after since")
    if metric in DERIVED:
        points, width = _completion_rate(services, host, rank, since, until, max_points)
    else:
        (t, v), width = read_points(services.store, host, metric, rank=rank, since=since, until=until,
                                    max_points=max_points)
        points = as_pairs(*downsample(t, v, max_points))
    combined = host_combine(services.store, host, metric, rank, parts_from=DERIVED.get(metric))
    out: dict[str, Any] = {"host": host, "metric": metric, "rank": rank, "points": points,
                           "resolution_s": width, "combine": combined, "label": combined["label"],
                           "unit": info(metric).unit}
    if metric in (COMPLETIONS, COMPLETION_RATE) and not rank:
        out["eta"] = eta(services.store, host, _target(services, host), time.time())
    return out


def _completion_rate(
    services: Services, host: str, rank: str, since: float | None, until: float | None, max_points: int
) -> tuple[list[list[float]], int | None]:
    # Read one rate window before `since`, so the first returned point already has a full window.
    ahead = None if since is None else since - RATE_WINDOW_S
    (t, v), width = read_points(services.store, host, COMPLETIONS, rank=rank, since=ahead, until=until,
                                max_points=max_points)
    window = max(RATE_WINDOW_S, 2.0 * (width or 0))
    rt, rv = trailing_rate(t, v, window, stored_run_starts(services.store, host))  # never across a restart
    marks = services.store.events(host, kinds=(CATCHUP_EVENT,), since=None if ahead is None else ahead - window)
    # an output file's series (rank = its path) only minds its own file's catch-ups
    steps = [float(m["t"]) for m in marks if m.get("source") == "outputs" and (not rank or m.get("path") == rank)]
    rt, rv = drop_unobserved(rt, rv, t, window, steps)
    if since is not None:
        keep = rt > since
        rt, rv = rt[keep], rv[keep]
    return as_pairs(*downsample(rt, rv, max_points)), width


def _target(services: Services, host: str) -> int | None:
    return next((h.target_completions for h in services.config.hosts if h.name == host), None)
