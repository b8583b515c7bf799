"""GET /api/series: one metric of one host, downsampled on the server with extremes kept."""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
from fastapi import APIRouter, Query
from tsdownsample import MinMaxLTTBDownsampler

from app.api.deps import ServicesDep, require_host

router = APIRouter(tags=["series"])
DEFAULT_MAX_POINTS = 2000


@router.get("/api/series")
def get_series(
    services: ServicesDep,
    host: str,
    metric: str,
    since: float | None = None,
    until: float | None = None,
    rank: str = "",
    max_points: Annotated[int, Query(ge=3, le=100_000)] = DEFAULT_MAX_POINTS,
) -> dict[str, Any]:
    """Points `[t, v]` (t in epoch seconds) after `since`, at most `max_points` of them."""
    require_host(services, host)
    t, v = services.store.series(host, metric, rank=rank, since=since, until=until)
    if len(t) > max_points:
        index = MinMaxLTTBDownsampler().downsample(t, v, n_out=max_points)  # type: ignore[no-untyped-call]
        t, v = t[index], v[index]
    points = np.column_stack((t, v)).tolist() if len(t) else []
    return {"host": host, "metric": metric, "rank": rank, "points": points}
