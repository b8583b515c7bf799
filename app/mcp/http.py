"""The MCP server as streamable HTTP at /mcp on kvwatch's own app, for a remote agent.

The route sits behind every middleware of the app (Host names, body size), refuses a cross-site
Origin as the mutating endpoints do, and the tools reach the API of the same app in process (an
ASGI transport), as the agent's own address and with the agent's own Authorization header: a
`restart` is refused (401) without the bearer token, and limited per address, as from the page.
The `restart` tool is listed only when the app has a token configured.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import httpx2
from fastapi import FastAPI
from mcp.server.mcpserver import Context
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from kvwatch.app.api.origin import SameOriginOnly
from kvwatch.app.mcp.api import Api
from kvwatch.app.mcp.server import build_server
from kvwatch.app.mcp.tools import Backend
from kvwatch.app.trusted_hosts import IN_PROCESS_NAME

PATH = "/mcp"
FORWARDED = ("authorization",)  # the agent's credentials go with its tool's API request, nothing else


def in_process(app: FastAPI) -> Backend:
    """The tools' Backend: this app over ASGI, as the MCP request's client, with its Authorization."""

    def backend(ctx: Context | None) -> Api:
        request = None if ctx is None else ctx.request_context.request
        client = getattr(request, "client", None)
        headers = getattr(request, "headers", None) or {}
        transport = httpx2.ASGITransport(app=app, client=(client.host, client.port) if client else ("127.0.0.1", 0))
        return Api(f"http://{IN_PROCESS_NAME}", {k: headers[k] for k in FORWARDED if k in headers}, transport)

    return backend


class _Sessions:
    """The /mcp route's target: the session manager of the lifespan now running. The SDK's manager runs
    once per instance, and an app's lifespan may run more than once (a test client, then a server)."""

    def __init__(self) -> None:
        self.current: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.current is None:
            await PlainTextResponse("MCP sessions are not running (the app has not started)", 503)(scope, receive, send)
            return
        await self.current(scope, receive, send)


def mount(app: FastAPI, control: bool) -> Callable[[], AbstractAsyncContextManager[None]]:
    """Add the /mcp route to `app`; the returned factory gives a context that runs its sessions (enter
    one in each lifespan)."""
    sessions = _Sessions()
    app.router.routes.append(Route(PATH, SameOriginOnly(sessions), include_in_schema=False))

    @asynccontextmanager
    async def running() -> AsyncIterator[None]:
        server = build_server(in_process(app), control)
        # Host names are the app's TrustedHostMiddleware's to check, Origin SameOriginOnly's.
        server.streamable_http_app(transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
        manager = server.session_manager
        async with manager.run():
            sessions.current = StreamableHTTPASGIApp(manager)
            try:
                yield
            finally:
                sessions.current = None

    return running
