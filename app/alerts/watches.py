"""Rules about data NOT arriving and about the SSH connection, on this machine's clock.

Staleness is the only honest answer when a log stops: its alerts freeze (no observations) and one
of these rules says so instead. Freshness is read from the store, so it means "new records were
committed", the same thing the charts show. While the connection itself is down, the stale rules
are inhibited: `host_unreachable` or `host_key_changed` says what is wrong, once. A collector
that is merely starting (`connecting`) or gone (`stopped`) inhibits nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kvwatch.app.alerts.rules import RuleSpec
from kvwatch.app.alerts.state import Observation
from kvwatch.app.config import HostConfig
from kvwatch.app.metrics_catalog.names import CLIENT_DONE, COMPLETIONS, RUNNING_REQ, TOKEN_USAGE
from kvwatch.app.store.base import Store
from kvwatch.collectors.health import HOST_KEY_REJECTED, HostHealth

EVENT_ROWS_LIMIT = 100_000
# Which committed rows prove a source is alive: metrics, and event rows by their `source`.
SOURCE_METRICS = {"server_log": (TOKEN_USAGE,), "client_log": (CLIENT_DONE,), "outputs": (COMPLETIONS,)}
HOST_KEY_PREFIX = HOST_KEY_REJECTED  # how the collector words it


@dataclass
class Freshness:
    """Per source, the wall time new rows last showed up; starts as `now` (a grace period)."""

    started: float
    last_wall: dict[str, float] = field(default_factory=dict)
    marks: dict[str, float | None] = field(default_factory=dict)
    latest: dict[str, float] = field(default_factory=dict)  # last value of each tracked metric

    def age(self, source: str, now: float) -> float:
        return now - self.last_wall.get(source, self.started)

    def refresh(self, store: Store, host: str, now: float) -> None:
        for source, metrics in SOURCE_METRICS.items():
            for metric in (*metrics, RUNNING_REQ) if source == "server_log" else metrics:
                if self._new_rows(store, host, metric) and metric != RUNNING_REQ:
                    self.last_wall[source] = now
        first = "events" not in self.marks  # only the newest event matters the first time round
        rows = store.events(host, since=self.marks.get("events"), limit=1 if first else EVENT_ROWS_LIMIT)
        self.marks["events"] = float(rows[-1]["t"]) if rows else self.marks.get("events")
        for source in {str(row.get("source")) for row in rows} & SOURCE_METRICS.keys():
            self.last_wall[source] = now

    def _new_rows(self, store: Store, host: str, metric: str) -> bool:
        if self.marks.get(metric) is None:  # first look: the newest sample, not the whole series
            newest = store.latest(host, metric)
            if newest is None:
                return False
            self.marks[metric], self.latest[metric] = newest
            return True
        t, v = store.series(host, metric, since=self.marks[metric])
        if not len(t):
            return False
        self.marks[metric], self.latest[metric] = float(t[-1]), float(v[-1])
        return True

    def rearm(self, now: float) -> None:
        self.last_wall = dict.fromkeys(SOURCE_METRICS, now)


@dataclass(frozen=True, slots=True)
class WatchContext:
    host: HostConfig
    fresh: Freshness
    health: HostHealth | None
    now: float


def server_stale(ctx: WatchContext, rule: RuleSpec) -> Observation | None:
    if _connection_down(ctx):
        return None
    age = ctx.fresh.age("server_log", ctx.now)
    stale = age >= rule.param("after")
    return Observation(ctx.now, stale, stale, age, f"no new server log records for {age:.0f}s")


def client_stale(ctx: WatchContext, rule: RuleSpec) -> Observation | None:
    if _connection_down(ctx) or not ctx.host.client_log or not ctx.host.outputs:
        return None
    client_age, outputs_age = ctx.fresh.age("client_log", ctx.now), ctx.fresh.age("outputs", ctx.now)
    after = rule.param("after")
    stale = client_age >= after and outputs_age < after
    detail = (
        f"client log silent for {client_age:.0f}s while outputs grew {outputs_age:.0f}s ago: likely stdout "
        "buffering; start the client with PYTHONUNBUFFERED=1 (or python -u)"
    )
    return Observation(ctx.now, stale, stale, client_age, detail)


def outputs_stalled(ctx: WatchContext, rule: RuleSpec) -> Observation | None:
    if _connection_down(ctx) or not ctx.host.outputs:
        return None
    age = ctx.fresh.age("outputs", ctx.now)
    done = ctx.fresh.latest.get(COMPLETIONS, 0.0)
    target = ctx.host.target_completions
    finished = target is not None and done >= target
    running = ctx.fresh.latest.get(RUNNING_REQ)
    busy = running is None or running > 0
    stalled = age >= rule.param("after") and busy and not finished
    detail = f"no new output lines for {age:.0f}s ({done:.0f} written)"
    return Observation(ctx.now, stalled, stalled, age, detail)


def host_key(ctx: WatchContext, rule: RuleSpec) -> Observation | None:
    if ctx.health is None:
        return None
    rejected = _key_rejected(ctx.health)
    # Only a working connection proves the key problem is gone; "connecting" after a restart is not.
    return Observation(ctx.now, rejected, ctx.health.state != "up", None, ctx.health.last_error or "")


def unreachable(ctx: WatchContext, rule: RuleSpec) -> Observation | None:
    if ctx.health is None:
        return None
    health = ctx.health
    down = health.state in ("reconnecting", "failed") and not _key_rejected(health)
    seconds = ctx.now - health.since if down else 0.0
    return Observation(ctx.now, down, health.state != "up", seconds, health.last_error or "")


def series_cap(ctx: WatchContext, rule: RuleSpec) -> Observation | None:
    """The host reached its cap of distinct series (app/pipeline/bounds.py): samples of new series are
    dropped while known ones keep flowing. It holds until the collecting process starts again."""
    if ctx.health is None:
        return None
    refused = ctx.health.series_refused
    detail = f"{refused} samples of new series dropped: the host has its cap of distinct series (max_series)"
    return Observation(ctx.now, refused > 0, refused > 0, float(refused), detail)


def _key_rejected(health: HostHealth) -> bool:
    return health.state == "failed" and (health.last_error or "").startswith(HOST_KEY_PREFIX)


def _connection_down(ctx: WatchContext) -> bool:
    # Not "stopped": when the collector process itself is gone, the data stopping is the news.
    return ctx.health is not None and ctx.health.state in ("reconnecting", "failed")


WATCHES: dict[str, Callable[[WatchContext, RuleSpec], Observation | None]] = {
    "server_stale": server_stale,
    "client_stale": client_stale,
    "outputs_stalled": outputs_stalled,
    "host_key": host_key,
    "unreachable": unreachable,
    "series_cap": series_cap,
}
