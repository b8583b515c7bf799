"""Retention (`server.retention_days`): raw samples older than that are pruned, rollups are kept.

Each series keeps its newest `retention_days` of raw samples, counted back from its own newest sample
rather than from the clock, so a log replayed from last month keeps its detail and a finished run keeps
its last days. That newest sample is capped at the wall clock: one line stamped in the future (a
clock stepped back, a corrupted stamp, year 2099) never moves the cut past `retention_days` before
now. Older history stays in the rollup buckets (10 s, 1 min, 10 min, with each bucket's
extremes), which is what wide windows read anyway, and /api/series answers narrow windows there from
the 10 s buckets.

Only the hosts this process collects are pruned (a web-only process prunes nothing; scale-out
collectors each prune their own hosts). Deletes go a bounded batch a transaction with a pause between,
so a collector's commit never waits behind more than one batch.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

from kvwatch.app.store.base import Store
from kvwatch.collectors.periodic import Periodic

log = logging.getLogger(__name__)
DAY_S = 86_400.0
EVERY_S = 600.0  # a month at 1 Hz gains 600 rows a series between passes: each pass is a few batches
FIRST_AFTER_S = 60.0  # after start: a backlog catch-up goes first
BATCH = 5_000  # rows a transaction: a few ms on SQLite here (BENCHMARKS.md, "Store maintenance")
PAUSE_S = 0.01  # between batches: the collectors' commits get the store lock in between


class Retention:
    """Prunes the raw samples of `hosts()` every `every_s` seconds, in a thread of its own."""

    def __init__(
        self, store: Store, hosts: Callable[[], Iterable[str]], keep_s: float, *,
        every_s: float | None = None, first_after_s: float | None = None, batch: int = BATCH,
        pause_s: float = PAUSE_S, clock: Callable[[], float] = time.time,
    ) -> None:
        self.store, self.hosts, self.keep_s, self.clock = store, hosts, keep_s, clock
        self.batch, self.pause_s = batch, pause_s
        # None: the module's defaults, read when the thread starts.
        self.every_s, self.first_after_s = every_s, first_after_s
        self.passes = 0
        self.pruned = 0
        self._loop: Periodic | None = None

    def _stopping(self) -> bool:
        return self._loop is not None and self._loop.stopping

    def prune_once(self) -> int:
        """One pass over every series of the hosts; the number of raw samples deleted."""
        deleted = 0
        for host in tuple(self.hosts()):
            for metric, rank in self.store.catalog(host):
                deleted += self._prune_series(host, metric, rank)
                if self._stopping():
                    return deleted
        self.passes += 1
        return deleted

    def _prune_series(self, host: str, metric: str, rank: str) -> int:
        last = self.store.latest(host, metric, rank)
        if last is None:
            return 0
        before = min(last[0], self.clock()) - self.keep_s
        deleted = 0
        while not self._stopping():
            count = self.store.prune_series(host, metric, rank, before, self.batch)
            deleted += count
            self.pruned += count
            if count < self.batch:
                break
            time.sleep(self.pause_s)
        return deleted

    def start(self) -> None:
        every = EVERY_S if self.every_s is None else self.every_s
        first = FIRST_AFTER_S if self.first_after_s is None else self.first_after_s
        self._loop = Periodic("kvwatch-retention", self._pass, every, first_after=first,
                              failure="pruning failed, next try at the next pass")
        self._loop.start()

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.stop(timeout=10)

    def _pass(self) -> None:
        started = time.monotonic()
        deleted = self.prune_once()
        if deleted:
            log.info("retention: pruned %d raw samples older than %.4g days in %.1f s",
                     deleted, self.keep_s / DAY_S, time.monotonic() - started)
