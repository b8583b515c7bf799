"""The `wait` tool: `kvwatch wait`'s conditions and its /status and /steady reads, polled here on the
server side so the agent's one call blocks until the condition holds (or the timeout passes)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import anyio

from kvwatch.app.mcp.api import Api, ApiFailure
from kvwatch.app.terminal.conditions import Condition, current_run_id, met, progress_note

POLL_S = 2.0
Progress = Callable[[float, float, str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Outcome:
    met: bool
    waited_s: float
    status: dict[str, Any]
    note: str  # where things stood: what the timeout sentence says


async def host_status(api: Api, host: str) -> dict[str, Any]:
    answer: dict[str, Any] = await api.get(f"/api/hosts/{quote(host, safe='')}/status")
    return answer


async def steady_answer(api: Api, status: dict[str, Any]) -> dict[str, Any] | None:
    """The current run's /steady answer; None with no run yet, or a run not registered yet."""
    run = current_run_id(status)
    if run is None:
        return None
    try:
        answer: dict[str, Any] = await api.get(f"/api/runs/{quote(run, safe='')}/steady")
    except ApiFailure as exc:
        if exc.status == 404:
            return None
        raise
    return answer


async def wait_for(api: Api, host: str, want: Condition, timeout_s: float, progress: Progress,
                   poll_s: float = POLL_S) -> Outcome:
    """Poll until `want` holds or `timeout_s` passes; a progress notification after each poll."""
    started = time.monotonic()
    while True:
        status = await host_status(api, host)
        steady = await steady_answer(api, status) if want.kind == "steady" else None
        waited = time.monotonic() - started
        note = progress_note(want, status, steady)
        if met(want, status, steady):
            return Outcome(True, waited, status, note)
        if waited >= timeout_s:
            return Outcome(False, waited, status, note)
        await progress(min(waited, timeout_s), timeout_s, f"waiting for {want}: {note}")
        await anyio.sleep(min(poll_s, timeout_s - waited))
