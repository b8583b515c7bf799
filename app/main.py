"""`create_app(services)`: the FastAPI app over services built by app/build.py. Collectors start and
stop with the app's lifespan."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.middleware.trustedhost import TrustedHostMiddleware

from kvwatch.app import vendor
from kvwatch.app.alerts import start_alerting
from kvwatch.app.api import ROUTERS, docs
from kvwatch.app.api.errors import register_error_handlers
from kvwatch.app.api.fleet_live import FleetKeeper
from kvwatch.app.api.headers import SecurityHeaders
from kvwatch.app.api.limits import BodyLimit, Limits, MutationRateLimit
from kvwatch.app.api.openapi import document_errors
from kvwatch.app.api.restart import live_controllers
from kvwatch.app.config import Config
from kvwatch.app.errors import ConfigError
from kvwatch.app.mcp.mount import mount_if_installed
from kvwatch.app.services import Services
from kvwatch.app.trusted_hosts import ENV_VAR, allowed_hosts


def api_token(config: Config) -> str | None:
    """The token mutating endpoints require: KVWATCH_TOKEN, else [server] token."""
    return os.environ.get("KVWATCH_TOKEN") or config.server.token


STATIC_DIR = Path(__file__).resolve().parent.parent / "static"


def answered_hosts(config: Config, bind: str | None = None) -> list[str]:
    """The Host names the app answers when it listens on `bind` (default: server.host)."""
    try:
        return allowed_hosts(config.server.allowed_hosts, bind or config.server.host)
    except ValueError as exc:
        raise ConfigError(f"{ENV_VAR}: {exc}") from None


def create_app(
    services: Services, *, manage_collectors: bool = True, limits: Limits | None = None, bind: str | None = None
) -> FastAPI:
    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if manage_collectors:
            services.start_collectors()
            services.alerts = start_alerting(services)
            # Alerts of a host the controller is restarting are muted, and re-armed once it is done.
            services.alerts.follow_restarts(lambda host: _restarting(app, host))
        # More than one host: the page leads with the fleet view, which the keeper's events keep live.
        fleet = FleetKeeper(services) if len(services.config.hosts) > 1 else None
        if fleet is not None:
            fleet.start()
        try:
            async with mcp_sessions():
                yield
        finally:
            if fleet is not None:
                fleet.stop()
            if manage_collectors:
                services.stop()

    # FastAPI's /docs and /redoc load Swagger UI/ReDoc from a CDN, which the page's CSP (and kvwatch's
    # no-CDN rule) forbids: /docs is kvwatch's own script-free page (api/docs.py), /openapi.json stays.
    app = FastAPI(title="kvwatch", version="0.1.0", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.services = services
    bounds = limits or Limits()
    # Added last runs first: an over-rate client is refused before its body is even read.
    app.add_middleware(BodyLimit, max_bytes=bounds.max_body_bytes)
    app.add_middleware(MutationRateLimit, per_minute=bounds.mutations_per_minute, burst=bounds.mutation_burst)
    # Outermost: a request for a foreign name (DNS rebinding) is refused before anything else runs.
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=answered_hosts(services.config, bind), www_redirect=False)
    app.add_middleware(SecurityHeaders)  # outside everything: refusals (400, 413, 429) carry the headers too
    app.state.api_token = api_token(services.config)
    mcp_sessions = mount_if_installed(app, control=app.state.api_token is not None)  # /mcp for a remote agent
    for router in ROUTERS:
        app.include_router(router)
    document_errors(app)
    register_error_handlers(app)
    # plotly.js comes from the installed plotly package: the page never needs a CDN.
    app.include_router(vendor.router)
    app.include_router(docs.router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html")

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:
        return Response(status_code=204)

    return app


def _restarting(app: FastAPI, host: str) -> bool:
    controller = live_controllers(app.state).get(host)
    return bool(controller is not None and controller.busy)
