"""GET /api/events: what the charts mark: server starts, retractions, crashes, capacity lines."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from kvwatch.app.api.deps import ServicesDep, require_host

router = APIRouter(tags=["events"])


@router.get("/api/events")
def list_events(
    services: ServicesDep,
    host: str,
    kind: Annotated[list[str] | None, Query()] = None,
    since: float | None = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
) -> list[dict[str, Any]]:
    """A host's stored events (newest `limit`, oldest first), optionally of some kinds only."""
    require_host(services, host)
    return services.store.events(host, kinds=tuple(kind or ()), since=since, limit=limit)
