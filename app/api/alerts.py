"""GET /api/alerts: pending and firing alerts, and recently resolved ones, newest first."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from kvwatch.app.alerts import alerts_view
from kvwatch.app.alerts.engine import RESOLVED_RETENTION_S
from kvwatch.app.api.deps import ServicesDep, require_host

router = APIRouter(tags=["alerts"])


@router.get("/api/alerts")
def list_alerts(
    services: ServicesDep,
    host: str | None = None,
    resolved_within: Annotated[float, Query(ge=0, le=30 * 86400)] = RESOLVED_RETENTION_S,
) -> list[dict[str, Any]]:
    """`[{"rule", "host", "state", "since", "value", ...}]`: firing first. `since` is when the
    alert entered its state, in epoch seconds on the rule's clock (`clock`: "event" = log time);
    `link` opens the chart window around it; resolved alerts stay listed for `resolved_within` s."""
    if host is not None:
        require_host(services, host)
    return alerts_view(services, host, resolved_within)
