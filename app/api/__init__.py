"""HTTP API: one router per resource, registered here in one explicit tuple."""

from __future__ import annotations

from fastapi import APIRouter

from app.api import alerts, events, export, hosts, metrics, series, stream

ROUTERS: tuple[APIRouter, ...] = (
    hosts.router, series.router, events.router, export.router, metrics.router, stream.router, alerts.router,
)
