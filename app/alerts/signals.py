"""Rules over log lines, on event time: each turns the samples logged after `start` into Observations.

Every evaluator reads what it needs from the store (a window before `start` included, so windowed
tests are right at the first new sample) and returns one Observation per new sample, in log order.
A host whose log stops produces no observations: its alerts neither fire nor resolve.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from kvwatch.app.alerts.rules import RuleSpec
from kvwatch.app.alerts.state import Observation
from kvwatch.app.metrics_catalog.names import GEN_THROUGHPUT, QUEUE_REQ, RUNNING_REQ, TOKEN_USAGE
from kvwatch.app.store.base import Store

Floats = npt.NDArray[np.float64]
EVENT_ROWS_LIMIT = 100_000


@dataclass
class HostReader:
    """One host's view of the store for the evaluators; `cache` survives between evaluations."""

    store: Store
    host: str
    cache: dict[str, Any] = field(default_factory=dict)
    floor: float | None = None  # log time the host was re-armed at: nothing before it counts
    run_from: float | None = None  # log time the host's current server run started: nor before it

    def series(self, metric: str, since: float | None) -> tuple[Floats, Floats]:
        return self.store.series(self.host, metric, since=self._since(since))

    def server_events(self, names: tuple[str, ...], since: float | None) -> list[tuple[float, str]]:
        rows = self.store.events(self.host, kinds=("event",), since=self._since(since), limit=EVENT_ROWS_LIMIT)
        return [(float(r["t"]), str(r["event"])) for r in rows if r.get("event") in names]

    def run_start(self) -> float | None:
        """Log time of the latest `ready` event: where the current server run began."""
        seen = self._since(self.cache.get("events_to"))
        for t, _ in self.server_events(("ready",), seen):
            self.cache["ready"] = t
        latest = self.store.events(self.host, kinds=("event",), since=seen, limit=1)
        if latest:
            self.cache["events_to"] = float(latest[-1]["t"])
        ready: float | None = self.cache.get("ready")
        return ready if ready is not None else self._since(None)

    def _since(self, since: float | None) -> float | None:
        bounds = [b for b in (since, self.floor, self.run_from) if b is not None]
        return max(bounds) if bounds else None


def threshold(reader: HostReader, rule: RuleSpec, start: float) -> list[Observation]:
    """`metric >= fire_at`, debounced: pending survives dips shorter than `debounce`, but only a
    sample at or above `fire_at` can turn it firing; firing holds while `metric >= stay_at`."""
    fire_at, stay_at, debounce = rule.param("fire_at"), rule.param("stay_at"), rule.param("debounce")
    t, v = reader.series(rule.param("metric"), start - debounce)
    first = int(np.searchsorted(t, start, "right"))
    # each sample's window holds the sample itself, also with `debounce = 0`
    window_lo = np.minimum(np.searchsorted(t, t - debounce, "right"), np.arange(len(t)))
    out = []
    for i in range(first, len(t)):
        now = bool(v[i] >= fire_at)
        recent = bool(v[window_lo[i] : i + 1].max() >= fire_at)
        out.append(Observation(float(t[i]), recent, bool(v[i] >= stay_at), float(v[i]), fire=now))
    return out


def queue(reader: HostReader, rule: RuleSpec, start: float) -> list[Observation]:
    """`#queue-req` grew by `min_increase` over `window` while token usage >= `usage_at`;
    holds while the queue is non-empty and usage stays that high."""
    window, usage_at, min_increase = rule.param("window"), rule.param("usage_at"), rule.param("min_increase")
    qt, qv = reader.series(QUEUE_REQ, start - window)
    ut, uv = reader.series(TOKEN_USAGE, start - window)
    first = int(np.searchsorted(qt, start, "right"))
    out = []
    for i in range(first, len(qt)):
        ui = int(np.searchsorted(ut, qt[i], "right")) - 1
        usage = float(uv[ui]) if ui >= 0 else 0.0
        before = max(int(np.searchsorted(qt, qt[i] - window, "right")) - 1, 0)
        q = float(qv[i])
        growing = q > 0 and q - float(qv[before]) >= min_increase
        high = usage >= usage_at
        detail = f"{q:.0f} waiting (was {qv[before]:.0f} {window:.0f}s before), token usage {usage:.0%}"
        out.append(Observation(float(qt[i]), growing and high, q > 0 and high, q, detail))
    return out


def events(reader: HostReader, rule: RuleSpec, start: float) -> list[Observation]:
    """At least `min_count` of the rule's server events within `window`; the log's own timestamps
    (events and decode lines) are the clock, so the alert resolves only as the log moves on."""
    window, names, min_count = rule.param("window"), tuple(rule.param("events")), rule.param("min_count")
    seen = reader.server_events(names, start - window)
    times = np.asarray([t for t, _ in seen], dtype=np.float64)
    ticks, _ = reader.series(TOKEN_USAGE, start)
    clock = np.union1d(times[times > start], ticks)
    out = []
    for now in clock:
        lo = int(np.searchsorted(times, now - window, "right"))
        hi = int(np.searchsorted(times, now, "right"))
        count = hi - lo
        kinds = sorted({name for _, name in seen[lo:hi]})
        detail = f"{count} in the last {window:.0f}s: {', '.join(kinds)}" if count else ""
        out.append(Observation(float(now), count >= min_count, count >= 1, float(count), detail))
    return out


def throughput(reader: HostReader, rule: RuleSpec, start: float) -> list[Observation]:
    """The median of the last `window` of gen throughput fell `drop_pct`% below the run's steady
    state (median after `warmup` from the latest `ready`) while the server is as busy as usual;
    holds until it is back within `clear_pct`%."""
    window = rule.param("window")
    base = _steady_state(reader, rule, start)
    t, v = reader.series(GEN_THROUGHPUT, start - window)
    rt, rv = reader.series(RUNNING_REQ, start - window)
    first = int(np.searchsorted(t, start, "right"))
    window_lo = np.searchsorted(t, t - window, "right")
    out = []
    for i in range(first, len(t)):
        current = float(np.median(v[window_lo[i] : i + 1]))
        if base is None:
            out.append(Observation(float(t[i]), False, False, current))
            continue
        median_tput, median_running = base
        ri = int(np.searchsorted(rt, t[i], "right")) - 1
        busy = ri < 0 or rv[ri] >= 0.5 * median_running
        drop = 1 - current / median_tput if median_tput > 0 else 0.0
        detail = f"{current:.0f} tok/s vs steady-state median {median_tput:.0f} tok/s ({drop:.0%} lower)"
        enter = busy and drop * 100 >= rule.param("drop_pct")
        hold = busy and drop * 100 >= rule.param("clear_pct")
        out.append(Observation(float(t[i]), enter, hold, current, detail))
    return out


def _steady_state(reader: HostReader, rule: RuleSpec, until: float) -> tuple[float, float] | None:
    """Medians of gen throughput and running requests over the run so far (up to `until`, so a
    backlog never judges its own past by its future); None until `min_samples` are in."""
    run_start = reader.run_start()
    since = None if run_start is None else run_start + rule.param("warmup")
    cached = reader.cache.get("steady")
    if cached is None or cached["since"] != since or cached["to"] > until:
        cached = {"since": since, "to": since, "tput": np.empty(0), "running": np.empty(0)}
    if since is None or until > since:
        for name, metric in (("tput", GEN_THROUGHPUT), ("running", RUNNING_REQ)):
            t, v = reader.series(metric, cached["to"])
            cached[name] = np.concatenate((cached[name], v[t <= until]))
        cached["to"] = until
    reader.cache["steady"] = cached
    if len(cached["tput"]) < rule.param("min_samples"):
        return None
    running = float(np.median(cached["running"])) if len(cached["running"]) else 0.0
    return float(np.median(cached["tput"])), running


SIGNALS: dict[str, Callable[[HostReader, RuleSpec, float], list[Observation]]] = {
    "threshold": threshold,
    "queue": queue,
    "events": events,
    "throughput": throughput,
}
