"""Bounds on what one client can send: request bodies (413) and the rate of mutating requests (429).

Plain ASGI middleware so it also covers bodies sent without a Content-Length (chunked): the body is
counted as it arrives, and the route never sees more than `max_body_bytes`. The rate bound is a token
bucket per client address over POST/PUT/PATCH/DELETE, applied before authentication so that guessing
tokens is slow too.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
MAX_CLIENTS = 10_000  # buckets kept before the full ones are dropped
# Refused credentials (401) from every address together: a bucket per address alone let a client that
# rotates its source address (127.0.0.0/8 holds 16M) guess 633 tokens a second.
FAILURES_PER_MINUTE = 60.0
FAILURE_BURST = 20


@dataclass(frozen=True, slots=True)
class Limits:
    max_body_bytes: int = 64 * 1024  # a restart request is a few hundred bytes
    mutations_per_minute: float = 30.0
    mutation_burst: int = 10


async def _reply(send: Send, status: int, detail: str, headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", ())).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await _reply(send, 413, f"request body over {self.max_bytes} bytes")
            return
        seen = 0
        started = replied = False

        async def counted() -> Message:
            # Routes swallow exceptions from reading the body (FastAPI answers 400), so the 413 is
            # sent from here and the route sees a client that went away.
            nonlocal seen, replied
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:
                if not started and not replied:
                    replied = True
                    await _reply(send, 413, f"request body over {self.max_bytes} bytes")
                return {"type": "http.disconnect"}
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            if replied:
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except Exception:
            if not replied:
                raise


# POSTs that change nothing (a what-if, a restart's dry run): the restart panel sends one per edit, and
# they must not spend the budget of the restart that follows. /mcp carries an agent's every message; a
# tool that changes something does it through its own API request, limited here as any other.
CHANGES_NOTHING = re.compile(r"^(?:/api/hosts/[^/]+/(?:predict|restart/check)|/mcp)$")


class MutationRateLimit:
    """A token bucket per client address for mutating methods; reads (and the POSTs that change
    nothing, CHANGES_NOTHING) are never limited here. Refused credentials also fill one bucket for all
    addresses: while it is empty every mutating request waits (a guesser slows a token holder too,
    which is the price of not being guessable from many addresses)."""

    def __init__(self, app: ASGIApp, per_minute: float, burst: int,
                 failures_per_minute: float = FAILURES_PER_MINUTE, failure_burst: int = FAILURE_BURST) -> None:
        self.app, self.rate, self.burst = app, per_minute / 60.0, burst
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()
        self._failure_rate, self._failure_burst = failures_per_minute / 60.0, failure_burst
        self._failures = (float(failure_burst), time.monotonic())

    def _failure_wait(self, spend: bool) -> float:
        """Seconds until the all-address bucket of refused credentials has a token (0: now);
        `spend` takes one (a 401 was just sent)."""
        now = time.monotonic()
        with self._lock:
            tokens, at = self._failures
            tokens = min(float(self._failure_burst), tokens + (now - at) * self._failure_rate)
            if spend:
                tokens = max(tokens - 1.0, 0.0)
            self._failures = (tokens, now)
            return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self._failure_rate

    def _take(self, client: str) -> float:
        """0 when the request may go on, else the seconds until it may."""
        now = time.monotonic()
        with self._lock:
            if len(self._buckets) > MAX_CLIENTS:  # many addresses: forget those whose bucket is full again
                self._buckets = {c: (t, a) for c, (t, a) in self._buckets.items()
                                 if t + (now - a) * self.rate < self.burst}
            tokens, at = self._buckets.get(client, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.rate)
            if tokens >= 1.0:
                self._buckets[client] = (tokens - 1.0, now)
                return 0.0
            self._buckets[client] = (tokens, now)
            return (1.0 - tokens) / self.rate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] == "http" and scope.get("method") in MUTATING
                and not CHANGES_NOTHING.match(scope.get("path", ""))):
            client = (scope.get("client") or ("?", 0))[0]
            wait = self._take(str(client))
            reason = "too many mutating requests; retry later"
            if wait <= 0 and (wait := self._failure_wait(spend=False)) > 0:
                reason = "too many refused credentials from all addresses; retry later"
            if wait > 0:
                retry = str(int(wait) + 1).encode()
                await _reply(send, 429, reason, ((b"retry-after", retry),))
                return
            await self.app(scope, receive, self._counting_refusals(send))
            return
        await self.app(scope, receive, send)

    def _counting_refusals(self, send: Send) -> Send:
        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start" and message.get("status") == 401:
                self._failure_wait(spend=True)
            await send(message)

        return watched
