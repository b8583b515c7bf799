"""AlertEngine: evaluates every host's rules over the store and keeps alert states in the store.

- Rules over log lines step on event time, one observation per new sample in log order, so a backlog
  read after a reconnect plays out exactly as it would have live (changes found in it are `late`).
  The first evaluation of a rule with no stored state looks back FIRST_LOOKBACK_S of log time: a
  kvwatch started on an already saturated server fires without replaying days of history; a rule
  with a stored watermark catches up at most CATCH_UP_LIMIT_S of log time.
- States are documents (kind "alert", key "host/rule"), written on every change and flushed every
  FLUSH_EVERY_S, so a new engine on the same store carries firing alerts on without a new message.
- `mute(host)` freezes a host's rules while the controller restarts its server; `unmute(host)` (or
  the mute running out) re-arms them: open alerts resolve with a note, data logged during the
  restart is skipped, stale timers restart, and the new run is judged from scratch.
- A run-scoped rule (`RuleSpec.run_scoped`) judges one server run: once a new run starts on the host
  (app/runs, followed by `RunWatch`), an alert that opened before it resolves (`run_ended`) within
  that evaluation, and the rule reads nothing logged before the new run's start.
- `reconfigure(hosts, rules)` takes a reloaded config: kept hosts carry their states on with the new
  rules, added hosts start like at start-up, and the open alerts of a removed host resolve.
"""

from __future__ import annotations

import copy
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kvwatch.app.alerts.listing import RESOLVED_RETENTION_S, sort_alerts, visible
from kvwatch.app.alerts.rules import RuleSpec
from kvwatch.app.alerts.runwatch import RunWatch
from kvwatch.app.alerts.signals import SIGNALS, HostReader
from kvwatch.app.alerts.silences import SilenceBook
from kvwatch.app.alerts.state import OPEN_STATES, AlertState, Observation, ResolvedReason, State, force, step
from kvwatch.app.alerts.text import public
from kvwatch.app.alerts.watches import WATCHES, Freshness, WatchContext
from kvwatch.app.config import HostConfig
from kvwatch.app.metrics_catalog.names import TOKEN_USAGE
from kvwatch.app.store.base import Store
from kvwatch.collectors.health import HostHealth

log = logging.getLogger(__name__)
FIRST_LOOKBACK_S = 600.0
CATCH_UP_LIMIT_S = 3600.0  # like Prometheus' for-outage-tolerance: older backlog is history, not news
FLUSH_EVERY_S = 10.0
# A host reading a backlog is evaluated this often, not every tick: each pass reads the rules' windows
# again, and at 1 s it took as much CPU as the catch-up itself (bench/attach_history.py, 1M lines).
CATCH_UP_EVERY_S = 10.0
MAX_MUTE_S = 1800.0  # a mute without an end still ends: a crashed controller must not silence a host
LATE_AFTER_S = 60.0
ALERT_DOC, MUTE_DOC = "alert", "alert_mute"


@dataclass(frozen=True, slots=True)
class Change:
    previous: State
    alert: AlertState  # a copy, as it was right after the change
    rule: RuleSpec
    payload: dict[str, Any]  # the public view (SSE `alert` data, webhook `alert` field)


@dataclass(slots=True)
class Mute:
    until: float
    reason: str


class AlertEngine:
    def __init__(
        self,
        store: Store,
        hosts: Sequence[HostConfig],
        rules: Mapping[str, tuple[RuleSpec, ...]],
        *,
        clock: Callable[[], float] = time.time,
        health: Callable[[str], HostHealth | None] | None = None,
        on_change: Callable[[Change], None] | None = None,
    ) -> None:
        self.store, self.clock = store, clock
        self.on_change = on_change
        self.hosts = {h.name: h for h in hosts}
        self.rules = {name: {r.name: r for r in rules.get(name, ())} for name in self.hosts}
        self._health = health or (lambda _host: None)
        self._evaluated_at: dict[str, float] = {}  # host -> clock of its last pass
        self._lock = threading.RLock()
        # Called with each change before its state is stored (the webhook outbox: a process killed
        # between the two writes leaves a message to send, never a state nobody was told about).
        self.on_record: Callable[[Change], None] | None = None
        # False in a process that does not hold the alerts lease: it only follows the stored states.
        self.leading = True
        self.silences = SilenceBook(store)  # acknowledged and muted alerts (app/alerts/silences.py)
        self.load()

    def load(self) -> None:
        """(Re)start from the store: states, mutes and re-arm points as the last evaluator left them."""
        with self._lock:
            now = self.clock()
            self._readers = {name: HostReader(self.store, name) for name in self.hosts}
            self._fresh = {name: Freshness(started=now) for name in self.hosts}
            self._runs = {name: RunWatch(self.store, name) for name in self.hosts}
            self._alerts = {a.key: a for a in map(AlertState.from_dict, _docs(self.store, ALERT_DOC))}
            mutes = [d for d in _docs(self.store, MUTE_DOC) if d["host"] in self.hosts]
            self._mutes = {d["host"]: Mute(d["until"], d["reason"]) for d in mutes if d["until"] > now}
            for doc in mutes:  # a host re-armed before a restart stays re-armed at the same point
                self._readers[doc["host"]].floor = doc.get("armed_at")
            self._dirty: set[str] = set()
            self._flushed_at = now

    def follow(self) -> list[Change]:
        """Not the evaluator: take states and mutes as the lease holder stored them; returns (and
        emits) the state changes since the last call, for this process's live stream."""
        changes = []
        with self._lock:
            now = self.clock()
            self._sync_mutes(now)
            stored = {a.key: a for a in map(AlertState.from_dict, _docs(self.store, ALERT_DOC))}
            for key, alert in stored.items():
                old = self._alerts.get(key)
                rule = self.rules.get(alert.host, {}).get(alert.rule)
                if rule is not None and (old is None or (old.seq, old.state) != (alert.seq, alert.state)):
                    previous: State = old.state if old is not None else "inactive"
                    changes.append(Change(previous, copy.copy(alert), rule, self._public(alert)))
            self._alerts, self._dirty = stored, set()
        return self._emit(changes)

    def _sync_mutes(self, now: float) -> None:
        """Mutes another process stored (its controller restarting a host) apply here too. A
        follower takes them as stored; the holder adds new ones and shortens one ended elsewhere,
        which its next evaluation then re-arms like a mute running out."""
        docs = {d["host"]: d for d in _docs(self.store, MUTE_DOC) if d["host"] in self.hosts}
        if not self.leading:
            self._mutes = {h: Mute(float(d["until"]), d["reason"]) for h, d in docs.items() if d["until"] > now}
            return
        for host, doc in docs.items():
            until, mute = float(doc["until"]), self._mutes.get(host)
            if until > now and (mute is None or mute.until != until):
                self._mutes[host] = Mute(until, doc["reason"])
            elif mute is not None and until <= now < mute.until:
                mute.until = now

    def evaluate(self) -> list[Change]:
        """One pass over every host; returns the state changes, oldest first per alert."""
        changes: list[Change] = []
        with self._lock:
            now = self.clock()
            self._sync_mutes(now)
            for host in self.hosts:
                try:
                    self._evaluate_host(host, now, changes)
                except Exception:  # one host's failure must not hold back the others' changes
                    log.exception("%s: alert evaluation failed; retrying at the next tick", host)
            if now - self._flushed_at >= FLUSH_EVERY_S:
                self.flush()
        return self._emit(changes)

    def _evaluate_host(self, host: str, now: float, changes: list[Change]) -> None:
        mute = self._mutes.get(host)
        if mute is not None and mute.until <= now:
            changes += self._rearm(host, now)
        if host in self._mutes:
            return
        health = self._health(host)
        backlog = health is not None and health.catching_up
        if backlog and now - self._evaluated_at.get(host, -math.inf) < CATCH_UP_EVERY_S:
            return  # the next pass within CATCH_UP_EVERY_S, or at the first tick after it caught up
        self._evaluated_at[host] = now
        self._fresh[host].refresh(self.store, host, now)
        changes += self._follow_run(host, now)
        for rule in self.rules[host].values():
            changes += self._evaluate_rule(host, rule, now)

    def reconfigure(self, hosts: Sequence[HostConfig], rules: Mapping[str, tuple[RuleSpec, ...]]) -> list[Change]:
        """Evaluate `hosts` with `rules` from now on. A kept host's states carry on (a firing alert
        stays firing with its `since`, so nothing is re-sent); an added host starts like at start-up
        (its stored states, if it had any, resume); a removed host's open alerts end
        (firing -> resolved, noted "host removed from the config") and it is no longer evaluated."""
        with self._lock:
            now = self.clock()
            new = {h.name: h for h in hosts}
            changes: list[Change] = []
            for host in [name for name in self.hosts if name not in new]:
                changes += self._retire(host, now)
            for name in new.keys() - self._readers.keys():
                self._readers[name] = HostReader(self.store, name)
                self._fresh[name] = Freshness(started=now)
                self._runs[name] = RunWatch(self.store, name)
            # New dicts, not edits: the service's restart check iterates `hosts` outside the lock.
            self.rules = {name: {r.name: r for r in rules.get(name, ())} for name in new}
            self.hosts = new
        return self._emit(changes)

    def _retire(self, host: str, now: float) -> list[Change]:
        changes = []
        for alert in [a for a in self._alerts.values() if a.host == host and self.leading]:
            rule = self.rules[host].get(alert.rule)
            if rule is not None:
                t = now if rule.clock == "wall" else (alert.evaluated_to or now)
                changes += self._forced(alert, rule, t, "host_removed", "host removed from the config", when=now)
        if self._mutes.pop(host, None) is not None:  # a host added back later starts unmuted
            self.store.put_document(MUTE_DOC, host, host, now, {"host": host, "until": 0.0, "reason": "removed"})
        del self._readers[host], self._fresh[host], self._runs[host]
        return changes

    def mute(self, host: str, until: float | None = None, reason: str = "controller restart") -> None:
        """Freeze `host`'s alerts until `until` (epoch seconds, wall clock) or `unmute(host)`."""
        with self._lock:
            self._require(host)
            now = self.clock()
            mute = Mute(until if until is not None else now + MAX_MUTE_S, reason)
            self._mutes[host] = mute
            self.store.put_document(MUTE_DOC, host, host, now, {"host": host, "until": mute.until, "reason": reason})

    def unmute(self, host: str) -> list[Change]:
        """End a mute and re-arm the host's rules; returns the changes that re-arming made."""
        with self._lock:
            self._require(host)
            if not self.leading:  # the lease holder re-arms it when it sees the mute ended
                self._end_mute(host)
                return []
            changes = self._rearm(host, self.clock()) if host in self._mutes else []
        return self._emit(changes)

    def _end_mute(self, host: str) -> None:
        mute = self._mutes.pop(host, None)
        if mute is not None:
            now = self.clock()
            self.store.put_document(MUTE_DOC, host, host, now, {"host": host, "until": now, "reason": mute.reason})

    def muted(self, host: str) -> Mute | None:
        with self._lock:
            return copy.copy(self._mutes.get(host))

    def snapshot(self, host: str | None = None, retention_s: float = RESOLVED_RETENTION_S) -> list[dict[str, Any]]:
        """Alerts a person should see: pending, firing and clearing, and resolved ones for `retention_s`."""
        with self._lock:
            now = self.clock()
            shown = [
                a
                for a in self._alerts.values()
                if (host is None or a.host == host) and a.host in self.hosts and visible(a, now, retention_s)
            ]
            items = [self._public(a) for a in shown]
        return sort_alerts(items)

    def current(self, host: str, rule: str) -> dict[str, Any]:
        """One alert's public view, whatever its state; KeyError for an unknown host or rule."""
        with self._lock:
            self._require(host)
            if rule not in self.rules[host]:
                raise KeyError(f"unknown rule {rule!r} for host {host!r}")
            return self._public(self._alert(host, rule))

    def announce(self, keys: set[str]) -> list[Change]:
        """Tell the subscribers (the pages) about alerts whose silence changed: no state change, so
        nothing for the webhook."""
        with self._lock:
            known = [a for a in map(self._alerts.get, sorted(keys)) if a and a.rule in self.rules.get(a.host, {})]
            changes = [Change(a.state, copy.copy(a), self.rules[a.host][a.rule], self._public(a)) for a in known]
        return self._emit(changes)

    def flush(self) -> None:
        with self._lock:
            for key in sorted(self._dirty):
                self._persist(self._alerts[key])
            self._dirty.clear()
            self._flushed_at = self.clock()

    def flush_abandon(self) -> None:
        """Drop unsaved progress: another process evaluates now, and its states win."""
        with self._lock:
            self._dirty.clear()

    def _emit(self, changes: list[Change]) -> list[Change]:
        # Outside the lock: a slow subscriber must not hold up mute() or the API.
        if self.on_change is not None:
            for change in changes:
                try:
                    self.on_change(change)
                except Exception:  # one failing subscriber must not lose the other changes
                    log.exception("alert %s: delivering the change failed", change.alert.key)
        return changes

    def _evaluate_rule(self, host: str, rule: RuleSpec, now: float) -> list[Change]:
        alert = self._alert(host, rule.name)
        if not rule.enabled:
            return self._forced(alert, rule, now, "rule_disabled", "rule disabled")
        if rule.clock == "wall":
            context = WatchContext(self.hosts[host], self._fresh[host], self._health(host), now)
            seen = WATCHES[rule.kind](context, rule)
            observations = [] if seen is None else [seen]
        else:
            start = self._start(host, alert.evaluated_to)
            if start is None:
                return []
            observations = SIGNALS[rule.kind](self._readers[host], rule, start)
        return self._apply(alert, rule, observations, now)

    def _apply(self, alert: AlertState, rule: RuleSpec, observations: list[Observation], now: float) -> list[Change]:
        changes = []
        newest = observations[-1].t if observations else 0.0
        run = self._runs[alert.host].run if rule.run_scoped else None
        for obs in observations:
            previous = alert.state
            if step(alert, obs, rule.for_s, rule.keep_firing_for_s):
                if previous not in OPEN_STATES and alert.state in OPEN_STATES:
                    alert.run_id = run.id if run is not None else None
                alert.late = rule.clock == "event" and newest - obs.t > LATE_AFTER_S
                changes.append(self._changed(alert, rule, previous, now))
        if observations:
            self._dirty.add(alert.key)
        return changes

    def _rearm(self, host: str, now: float) -> list[Change]:
        reason = self._mutes.pop(host).reason
        fresh = self._fresh[host]
        fresh.refresh(self.store, host, now)
        fresh.rearm(now)
        latest = fresh.marks.get(TOKEN_USAGE)
        # Everything logged up to now belongs to the old run or the restart itself: windows, the
        # steady state and event counts of the new run start after it.
        reader = self._readers[host]
        reader.cache.clear()
        reader.floor = max(latest or 0.0, fresh.marks.get("events") or 0.0) or None
        doc = {"host": host, "until": 0.0, "reason": reason, "armed_at": reader.floor}
        self.store.put_document(MUTE_DOC, host, host, now, doc)
        changes = []
        for rule in self.rules[host].values():
            alert = self._alert(host, rule.name)
            t = now if rule.clock == "wall" else (latest if latest is not None else alert.evaluated_to or now)
            changes += self._forced(alert, rule, t, "rearmed", f"re-armed after {reason}", when=now)
            alert.evaluated_to = latest if rule.clock == "event" else alert.evaluated_to
            self._dirty.add(alert.key)
        return changes

    def _follow_run(self, host: str, now: float) -> list[Change]:
        """A new server run on `host`: its run-scoped rules read from the run's start on, and their
        alerts that opened before it resolve (`run_ended`) at that start, on the log's clock."""
        run = self._runs[host].refresh()
        reader = self._readers[host]
        if run is None:
            return []
        # Reads are `t > since`: from just before the start, so a sample logged at it counts.
        run_from = math.nextafter(run.started_at, -math.inf)
        if reader.run_from == run_from:
            return []
        if reader.run_from is not None:
            reader.cache.clear()  # windows and the steady state of the run that ended
        reader.run_from = run_from
        changes = []
        for rule in [r for r in self.rules[host].values() if r.run_scoped]:
            alert = self._alert(host, rule.name)
            opened = alert.active_at if alert.active_at is not None else alert.since
            if alert.state in OPEN_STATES and opened is not None and opened < run.started_at:
                t = max(run.started_at, alert.since or run.started_at)
                changes += self._forced(alert, rule, t, "run_ended", f"new run {run.id}", when=now)
            if alert.evaluated_to is not None and alert.evaluated_to < run_from:
                alert.evaluated_to = run_from
                self._dirty.add(alert.key)
        return changes

    def _forced(
        self, alert: AlertState, rule: RuleSpec, t: float, reason: ResolvedReason, note: str, when: float | None = None
    ) -> list[Change]:
        previous = alert.state
        if not force(alert, t, reason, note):
            return []
        alert.late = False
        return [self._changed(alert, rule, previous, self.clock() if when is None else when)]

    def _changed(self, alert: AlertState, rule: RuleSpec, previous: State, now: float) -> Change:
        alert.changed_wall = now
        change = Change(previous, copy.copy(alert), rule, self._public(alert))
        if self.on_record is not None:
            self.on_record(change)
        self._persist(alert)
        reason = f", {alert.resolved_reason}" if alert.resolved_reason else ""
        log.info("alert %s: %s -> %s (value %s%s)", alert.key, previous, alert.state, alert.value, reason)
        return change

    def _start(self, host: str, evaluated_to: float | None) -> float | None:
        """Where a rule's observations resume: after its watermark, but never more than
        CATCH_UP_LIMIT_S before the newest data (a kvwatch that was down for a day does not replay
        the day), and FIRST_LOOKBACK_S before it for a rule never evaluated."""
        marks = self._fresh[host].marks
        latest = marks.get(TOKEN_USAGE) or marks.get("events")
        if latest is None:
            return evaluated_to
        if evaluated_to is None:
            return latest - FIRST_LOOKBACK_S
        return max(evaluated_to, latest - CATCH_UP_LIMIT_S)

    def _alert(self, host: str, rule: str) -> AlertState:
        key = f"{host}/{rule}"
        if key not in self._alerts:
            self._alerts[key] = AlertState(rule=rule, host=host)
        return self._alerts[key]

    def _public(self, alert: AlertState) -> dict[str, Any]:
        rule = self.rules.get(alert.host, {}).get(alert.rule)
        return self.silences.annotate(public(alert, rule, muted=alert.host in self._mutes), self.clock())

    def _persist(self, alert: AlertState) -> None:
        t = alert.since if alert.since is not None else 0.0
        self.store.put_document(ALERT_DOC, alert.key, alert.host, t, alert.to_dict())
        self._dirty.discard(alert.key)

    def _require(self, host: str) -> None:
        if host not in self.hosts:
            raise KeyError(f"unknown host {host!r}")


def _docs(store: Store, kind: str) -> list[dict[str, Any]]:
    return [doc["data"] for doc in store.documents(kind)]
