"""HTTP API: one router per resource, registered here in one explicit tuple."""

from __future__ import annotations

from fastapi import APIRouter

from kvwatch.app.api import (
    alerts,
    campaign,
    catalog,
    compare,
    diagnosis,
    events,
    export,
    fleet,
    hosts,
    metrics,
    restart,
    restart_check,
    runs,
    series,
    status,
    steady,
    stream,
)

ROUTERS: tuple[APIRouter, ...] = (
    hosts.router,
    series.router,
    catalog.router,
    events.router,
    runs.router,
    compare.router,
    alerts.router,
    export.router,
    metrics.router,
    stream.router,
    restart.router,
    restart_check.router,
    status.router,
    steady.router,
    diagnosis.router,
    fleet.router,
    campaign.router,
)
