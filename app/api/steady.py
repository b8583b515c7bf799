"""GET /api/runs/{run_id}/steady: whether a run has settled, by the detection /api/compare uses.

`kvwatch wait --until steady` polls it, so that `kvwatch compare` runs once there is something
steady to compare instead of after a guessed sleep.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from kvwatch.app.api.deps import ServicesDep
from kvwatch.app.compare import DEFAULT_MIN_STEADY_S, compute_run_stats
from kvwatch.app.runs import find_runs

router = APIRouter(tags=["runs"])


@router.get("/api/runs/{run_id}/steady")
def get_steady(
    services: ServicesDep, run_id: str, min_steady: Annotated[float, Query(ge=0)] = DEFAULT_MIN_STEADY_S
) -> dict[str, Any]:
    """The run's automatic steady window as /api/compare reports it (`status` steady|settling|
    too_short|no_data, `start`, `end`, `duration_s`, `message`, ...), plus `run` and `host`."""
    (run,) = find_runs(services.store, [h.name for h in services.config.hosts], [run_id])
    window = compute_run_stats(services.store, run, None, min_steady).window
    return {"run": run.id, "host": run.host, **window.as_dict(run.started_at)}
