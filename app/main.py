"""`create_app(services)`: the FastAPI app. Collectors start and stop with the app's lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, Response
from fastapi.staticfiles import StaticFiles

from app.alerts import start_alerting
from app.api import ROUTERS
from app.api.limits import BodyLimit, Limits, MutationRateLimit
from app.api.openapi import document_errors
from app.services import Services

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
PLOTLY_DIR = Path(str(files("plotly") / "package_data"))


def create_app(services: Services, *, manage_collectors: bool = True, limits: Limits | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if manage_collectors:
            services.start_collectors()
            services.alerts = start_alerting(services)
        try:
            yield
        finally:
            if manage_collectors:
                services.stop()

    app = FastAPI(title="kvwatch", version="0.1.0", lifespan=lifespan)
    app.state.services = services
    bounds = limits or Limits()
    # Added last runs first: an over-rate client is refused before its body is even read.
    app.add_middleware(BodyLimit, max_bytes=bounds.max_body_bytes)
    app.add_middleware(MutationRateLimit, per_minute=bounds.mutations_per_minute, burst=bounds.mutation_burst)
    for router in ROUTERS:
        app.include_router(router)
    document_errors(app)
    # plotly.js comes from the installed plotly package: the page never needs a CDN.
    app.mount("/vendor", StaticFiles(directory=PLOTLY_DIR), name="vendor")
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html")

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:
        return Response(status_code=204)

    return app
