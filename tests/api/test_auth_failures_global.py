"""Refused credentials count for all addresses together: rotating the source address (127.x) no longer
buys a fresh bucket of guesses."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kvwatch.app.api.limits import MutationRateLimit


def _post(limit: MutationRateLimit, client: str) -> int:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/api/hosts/gpu1/restart", "client": (client, 40000),
             "headers": []}
    # A thread of its own: a browser test before it on this worker may have left an event loop running.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, limit(scope, receive, send)).result(timeout=30)
    return int(next(m["status"] for m in sent if m["type"] == "http.response.start"))


async def _refuse(scope: Any, receive: Any, send: Any) -> None:  # a wrong token, every time
    await send({"type": "http.response.start", "status": 401, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def test_guesses_from_rotating_addresses_are_limited_together() -> None:
    limit = MutationRateLimit(_refuse, per_minute=30, burst=10, failures_per_minute=60, failure_burst=20)
    answers = [_post(limit, f"127.0.{n // 250}.{n % 250 + 1}") for n in range(100)]  # a new address each time
    assert answers[:20] == [401] * 20
    assert answers[20:] == [429] * 80  # before: 100 guesses, all answered 401


def test_one_address_keeps_its_own_bucket_too() -> None:
    limit = MutationRateLimit(_refuse, per_minute=30, burst=10, failures_per_minute=6000, failure_burst=1000)
    answers = [_post(limit, "127.0.0.1") for _ in range(12)]
    assert answers == [401] * 10 + [429] * 2
