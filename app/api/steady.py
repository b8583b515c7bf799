"""GET /api/runs/{run_id}/steady: whether a run has settled, by the detection /api/compare uses.

`kvwatch wait --until steady` polls it, so that `kvwatch compare` runs once there is something
steady to compare instead of after a guessed sleep: `filled` is true once the window is steady AND
a comparison would give this run a value in every level and rate row (`empty_rows` names the others).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from kvwatch.app.api.deps import ServicesDep
from kvwatch.app.compare import DEFAULT_MIN_STEADY_S, compute_run_stats
from kvwatch.app.compare.report import unfilled_rows
from kvwatch.app.compare.settings import min_steady_by_host
from kvwatch.app.runs import find_runs

router = APIRouter(tags=["runs"])


@router.get("/api/runs/{run_id}/steady")
def get_steady(
    services: ServicesDep, run_id: str,
    min_steady: Annotated[float | None, Query(ge=0, description="seconds; default: the host's")] = None,
) -> dict[str, Any]:
    """The run's automatic steady window as /api/compare reports it (`status` steady|settling|
    too_short|no_data, `start`, `end`, `duration_s`, `message`, ...), plus `run`, `host` and
    `min_steady_s` (the host's `[hosts.compare] min_steady` unless the query sets one), `filled`
    and `empty_rows`."""
    (run,) = find_runs(services.store, [h.name for h in services.config.hosts], [run_id])
    minimum = min_steady_by_host(services.store, [run.host], services.config, min_steady)[run.host]
    stats = compute_run_stats(services.store, run, None, minimum)
    empty = unfilled_rows(services.store, stats)
    return {"run": run.id, "host": run.host, "min_steady_s": minimum, "default_min_steady_s": DEFAULT_MIN_STEADY_S,
            **stats.window.as_dict(run.started_at), "filled": stats.window.ok and not empty, "empty_rows": empty}
