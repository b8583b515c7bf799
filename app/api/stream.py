"""GET /api/stream: Server-Sent Events for new samples, alert changes and run changes.

Every bus event carries its id (app/bus.py). A reconnecting browser sends the last one it saw as
`Last-Event-ID` (or, for a stream the page reopened itself, `?last_event_id=`): the events it missed
are replayed first, from the bus's bounded log. When the log no longer has them all, the `hello`
event says `"replayed": false` and the page backfills its charts from `/api/series`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request
from fastapi.sse import EventSourceResponse, ServerSentEvent

from kvwatch.app.api.deps import ServicesDep
from kvwatch.app.bus import Published

router = APIRouter(tags=["stream"])
RECONNECT_MS = 1000  # the browser's wait before it reconnects a dropped stream


def _event(item: Published) -> ServerSentEvent:
    return ServerSentEvent(event=item.event, raw_data=item.raw, id=item.id)


def _wanted(item: Published, samples_of: str | None) -> bool:
    """A page that charts one host of many asks for that host's samples only: the other hosts' reach
    it as the fleet's one `fleet` event a second."""
    return samples_of is None or item.event != "sample" or item.host == samples_of


@router.get("/api/stream", response_class=EventSourceResponse)
async def stream(
    request: Request,
    services: ServicesDep,
    last_event_id: Annotated[str | None, Query(max_length=64)] = None,
    last_event_id_header: Annotated[str | None, Header(alias="Last-Event-ID", max_length=64)] = None,
    samples_of: Annotated[str | None, Query(max_length=256)] = None,
) -> AsyncIterator[ServerSentEvent]:
    """Live `sample`, `alert`, `run`, `event` and `host` events, each with an id; the page never polls.
    `hello` opens every connection, with the id live events follow: `resumed_from` is the id it
    continues after (or null) and `replayed` whether every event since then follows (false: backfill
    from `/api/series`). `samples_of`: only that host's `sample` events (every other event still comes)."""
    resume = last_event_id_header or last_event_id
    subscription, replay = services.bus.subscribe(resume)
    try:
        hello = {"started_at": services.started_at, "resumed_from": resume, "replayed": replay.complete}
        # hello's id is where this client stands, so even a page that saw no event yet resumes exactly.
        yield ServerSentEvent(event="hello", data=hello, id=replay.position, retry=RECONNECT_MS)
        for missed in replay.events:
            if _wanted(missed, samples_of):
                yield _event(missed)
        while not await request.is_disconnected():
            item = await subscription.next()
            if item is None:  # fell a whole queue behind: end; the browser resumes from its last id
                return
            if _wanted(item, samples_of):
                yield _event(item)
    finally:
        services.bus.unsubscribe(subscription)
