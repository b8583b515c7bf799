"""GET /api/stream: Server-Sent Events for new samples, alert changes and run changes."""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.sse import EventSourceResponse, ServerSentEvent

from kvwatch.app.api.deps import ServicesDep

router = APIRouter(tags=["stream"])


@router.get("/api/stream", response_class=EventSourceResponse)
async def stream(request: Request, services: ServicesDep) -> AsyncIterator[ServerSentEvent]:
    """Live `sample`, `alert`, `run`, `event` and `host` events; the page never polls."""
    queue = services.bus.subscribe()
    try:
        yield ServerSentEvent(event="hello", data={"started_at": services.started_at})
        while not await request.is_disconnected():
            event, data = await queue.get()
            yield ServerSentEvent(event=event, data=data)
    finally:
        services.bus.unsubscribe(queue)
