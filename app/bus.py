"""Fan-out of live events to SSE subscribers. Publishing is thread-safe; subscribers are asyncio."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

SUBSCRIBER_QUEUE = 1000


class EventBus:
    def __init__(self) -> None:
        self._subscribers: set[tuple[asyncio.AbstractEventLoop, asyncio.Queue[tuple[str, Any]]]] = set()
        self._lock = threading.Lock()

    def subscribe(self) -> asyncio.Queue[tuple[str, Any]]:
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue(SUBSCRIBER_QUEUE)
        with self._lock:
            self._subscribers.add((asyncio.get_running_loop(), queue))
        return queue

    def unsubscribe(self, queue: asyncio.Queue[tuple[str, Any]]) -> None:
        with self._lock:
            self._subscribers = {s for s in self._subscribers if s[1] is not queue}

    def publish(self, event: str, data: Any) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for loop, queue in subscribers:
            try:
                loop.call_soon_threadsafe(_offer, queue, (event, data))
            except RuntimeError:  # that subscriber's loop has closed
                self.unsubscribe(queue)


def _offer(queue: asyncio.Queue[tuple[str, Any]], item: tuple[str, Any]) -> None:
    # A slow page loses live points rather than growing memory; it refetches history on reconnect.
    if not queue.full():
        queue.put_nowait(item)
