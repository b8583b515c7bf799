"""GET /api/export: a host's raw series over a window or a run, as CSV or Parquet (app.export)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query, Response
from fastapi.responses import StreamingResponse

from kvwatch.app.api.catalog import host_combine
from kvwatch.app.api.deps import ServicesDep, require_host
from kvwatch.app.api.points import run_window
from kvwatch.app.store.base import Store

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
    """Every stored sample of the chosen metrics (default: all of the host's) in the window; where
    retention pruned the raw samples, 10 s rollup buckets marked in a `source` column (app.export)."""
    # pandas (and its ~85 MB) is imported by the first export, not by every kvwatch process: a
    # collector that never exports stays under the catch-up memory target (BENCHMARKS.md).
    from kvwatch.app.export import NOTHING_STORED, encode_chunks, rollup_rows, safe_name, series_frame

    require_host(services, host)
    name = host
    if run is not None:
        since, until = run_window(services.store, host, run)
        name = f"{host}-{run}"
    metrics = metric or services.store.metrics(host)
    if not metrics:
        raise HTTPException(status_code=404, detail=f"host {host!r} has no stored series")
    frame = series_frame(services.store, host, metrics, rank, since, until)
    if run is not None and frame.empty:
        raise HTTPException(status_code=404, detail=f"run {run!r} of {host!r}: {NOTHING_STORED}")
    headers = {"Content-Disposition": f'attachment; filename="{safe_name(name)}.{format}"',
               # how many rows are 10 s rollup buckets (raw samples pruned by retention), 0: all raw
               "X-Kvwatch-Rollup-Rows": str(rollup_rows(frame)),
               # what each exported series is, in the metric catalog's words: `running_req=sum over 4 DP ranks`
               "X-Kvwatch-Combine": combine_header(services.store, host, metrics, rank)}
    # Streamed a piece at a time: a long run's export is never one bytes object next to its table.
    return StreamingResponse(encode_chunks(frame, format), media_type=MEDIA_TYPES[format], headers=headers)



def combine_header(store: Store, host: str, metrics: list[str], rank: str) -> str:
    """`metric=label` pairs, `; `-separated, ASCII (a header): what each exported series shows."""
    pairs = (f"{m}={host_combine(store, host, m, rank)['label']}" for m in metrics)
    return "; ".join(pairs).encode("ascii", "replace").decode("ascii")
