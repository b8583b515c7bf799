"""FastAPI dependencies: the one way routes reach the app's services."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request

from kvwatch.app.services import Services


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


def require_host(services: Services, name: str) -> None:
    if name not in {h.name for h in services.config.hosts}:
        raise HTTPException(status_code=404, detail=f"unknown host {name!r}")
