"""The web server's share of this process's file descriptors, and quiet logs when it is exceeded.

Every TCP connection holds a descriptor. 300 idle connections against a 256-descriptor limit used to
leave the collectors (SSH sockets, the SQLite files) without one and made asyncio log a traceback for
each refused accept (157 MB in 30 s). So:
- the web server gets a budget: the soft RLIMIT_NOFILE less what the collectors keep (RESERVED_FDS
  and FDS_PER_HOST a host); a connection past it is answered 503 at once and closed;
- a connection that sends no request is closed after `timeout_keep_alive` (uvicorn only times out a
  connection between requests; a socket that never sent one was kept for good);
- the asyncio and uvicorn loggers repeat one message at most once every QUIET_S, with the count.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

RESERVED_FDS = 64
FDS_PER_HOST = 8  # an SSH socket, its channels' pipes locally, a store connection, a tunnel
MIN_BUDGET = 16
QUIET_S = 10.0
_FULL = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\nretry-after: 1\r\n\r\n"


def connection_budget(hosts: int, nofile: int | None = None) -> int:
    """How many HTTP connections may be open at once."""
    if nofile is None:
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if nofile == resource.RLIM_INFINITY or nofile <= 0:
        nofile = 1 << 16
    return max(MIN_BUDGET, nofile - RESERVED_FDS - FDS_PER_HOST * hosts)


class BudgetedH11(H11Protocol):
    """uvicorn's h11 protocol with the budget (`limit_concurrency`) enforced at connect, and idle
    connections closed before their first request as after any other."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if self.limit_concurrency is not None and len(self.connections) > self.limit_concurrency:
            transport.write(_FULL)
            transport.close()
            return
        self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive, self.timeout_keep_alive_handler)


class QuietRepeats(logging.Filter):
    """One message (its template) at most once every `every` seconds, then with how many were left out."""

    def __init__(self, every: float = QUIET_S) -> None:
        super().__init__()
        self.every = every
        self._seen: dict[str, tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = f"{record.name}:{record.msg}"
        now = time.monotonic()
        last, skipped = self._seen.get(key, (float("-inf"), 0))
        if now - last < self.every:
            self._seen[key] = (last, skipped + 1)
            return False
        if len(self._seen) > 1000:
            self._seen.clear()
        self._seen[key] = (now, 0)
        if skipped:
            record.msg = f"{record.msg} ({skipped} more like this in the last {now - last:.0f} s)"
        record.exc_info, record.exc_text = None, None  # the traceback of a refused accept says nothing new
        return True


def quiet_server_logs() -> None:
    for name in ("asyncio", "uvicorn.error"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, QuietRepeats) for f in logger.filters):
            logger.addFilter(QuietRepeats())


def budget_options(hosts: int) -> dict[str, Any]:
    """uvicorn settings for the budget."""
    return {"http": BudgetedH11, "limit_concurrency": connection_budget(hosts), "timeout_keep_alive": 5}
