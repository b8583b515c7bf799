"""GET /api/export: a host's raw series over a window or a run, as CSV or Parquet (pandas).

Long format, one row a sample: `time` (UTC), `t` (epoch seconds), `metric`, `rank`, `value`.
"""

from __future__ import annotations

import io
from typing import Annotated, Literal

import pandas as pd
from fastapi import APIRouter, HTTPException, Query, Response

from app.api.deps import ServicesDep, require_host
from app.api.points import run_window

router = APIRouter(tags=["export"])
MEDIA_TYPES = {"csv": "text/csv; charset=utf-8", "parquet": "application/vnd.apache.parquet"}


@router.get("/api/export", response_class=Response)
def export_series(
    services: ServicesDep,
    host: str,
    format: Literal["csv", "parquet"] = "csv",  # the query parameter's public name
    metric: Annotated[list[str] | None, Query()] = None,
    rank: str = "",
    since: float | None = None,
    until: float | None = None,
    run: str | None = None,
) -> Response:
    """Every stored sample of the chosen metrics (default: all of the host's) in the window."""
    require_host(services, host)
    name = host
    if run is not None:
        since, until = run_window(services.store, host, run)
        name = f"{host}-{run}"
    metrics = metric or services.store.metrics(host)
    frame = _frame(services, host, metrics, rank, since, until)
    if format == "csv":
        body = frame.to_csv(index=False).encode()
    else:
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        body = buffer.getvalue()
    headers = {"Content-Disposition": f'attachment; filename="{_safe(name)}.{format}"'}
    return Response(body, media_type=MEDIA_TYPES[format], headers=headers)


def _frame(
    services: ServicesDep, host: str, metrics: list[str], rank: str, since: float | None, until: float | None
) -> pd.DataFrame:
    parts = []
    for name in metrics:
        t, v = services.store.series(host, name, rank=rank, since=since, until=until)
        parts.append(pd.DataFrame({"t": t, "metric": name, "rank": rank, "value": v}))
    if not parts:
        raise HTTPException(status_code=404, detail=f"host {host!r} has no stored series")
    frame = pd.concat(parts, ignore_index=True).sort_values(["t", "metric"], kind="stable")
    frame.insert(0, "time", pd.to_datetime(frame["t"], unit="s", utc=True))
    return frame.reset_index(drop=True)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
