"""The mutating endpoints' Origin rule (`restart.require_same_origin`) for a mounted ASGI app that
is not a FastAPI route: /mcp (app/mcp/http.py). A browser's cross-site request is answered 403 as
the routes answer it; a request without Origin (an agent's client) goes on."""

from __future__ import annotations

from fastapi import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from kvwatch.app.api.restart import require_same_origin


class SameOriginOnly:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            require_same_origin(Request(scope))
        except HTTPException as exc:
            await JSONResponse({"detail": exc.detail}, status_code=exc.status_code)(scope, receive, send)
            return
        await self.app(scope, receive, send)
