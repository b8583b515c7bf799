"""HTTP API: one router per resource, registered here in one explicit tuple."""

from __future__ import annotations

from fastapi import APIRouter

from app.api import hosts, series, stream

ROUTERS: tuple[APIRouter, ...] = (hosts.router, series.router, stream.router)
