"""GET /api/runs: the runs of a host (one server start each), with flags, capacity and state."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from kvwatch.app.api.deps import ServicesDep, require_host
from kvwatch.app.runs import list_runs

router = APIRouter(tags=["runs"])


@router.get("/api/runs")
def get_runs(services: ServicesDep, host: str | None = None) -> list[dict[str, Any]]:
    """Runs in start order: `id`, `host`, `flags`, `started_at`, `ended_at` (null: still on), `capacity`,
    `state` (starting|running|ended|failed), `source` (log|controller). Without `host`: every host's."""
    if host is not None:
        require_host(services, host)
    hosts = [host] if host is not None else [h.name for h in services.config.hosts]
    return [run.as_dict() for name in hosts for run in list_runs(services.store, name)]
