"""One alert's state machine, as plain data: inactive → pending → firing ⇄ clearing → resolved.

Semantics follow Prometheus (`for`, `keep_firing_for`) with a deadband on top:
- pending starts at the first observation whose `enter` test holds; any observation without it
  drops the alert back to inactive, so the `for` timer restarts (a short spike never fires);
- pending turns firing at the first observation with `t - active_at >= for` whose `fire` test holds
  (`for = 0` fires on the first observation); rules that debounce `enter` over a window keep
  `fire` strict, so a spike shorter than `for` never fires however the window is set;
- while firing, the weaker `hold` test keeps it firing (hysteresis: fire at 0.95, stay while
  >= 0.90); once `hold` fails the alert is `clearing` (the webhook's last word on it stays FIRING,
  the page and `kvwatch status` show its value is on the good side now), back to firing with its
  first `since` if `hold` holds again, and resolved (reason `cleared`) after `hold` has failed for
  `keep_firing_for`. `keep_firing_for = 0` resolves at once.
- `force` ends an open alert from outside (a run ending, a re-arm, a rule disabled) with its reason.
Time is whatever the rule's clock says: log time for rules over log lines, wall time for the rest.
Nothing here ever sees "no data": a rule with no new observation simply does not step.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

State = Literal["inactive", "pending", "firing", "clearing", "resolved"]
# Why a resolved alert resolved: its condition stayed false for keep_firing_for, the server run it
# fired on ended, the host was re-armed after a mute, the rule was disabled, the host removed.
ResolvedReason = Literal["cleared", "run_ended", "rearmed", "rule_disabled", "host_removed"]
OPEN_STATES = ("pending", "firing", "clearing")  # shown on the page and by `kvwatch status`
NOTIFIED_STATES = ("firing", "resolved")  # what goes to the webhook; pending and clearing only to the page


@dataclass(frozen=True, slots=True)
class Observation:
    t: float
    enter: bool  # the condition that starts (and keeps) an alert pending
    hold: bool  # the weaker condition that keeps a firing alert firing
    value: float | None
    detail: str = ""
    fire: bool | None = None  # may a pending alert turn firing now? (default: `enter`)


@dataclass(slots=True)
class AlertState:
    rule: str
    host: str
    state: State = "inactive"
    since: float | None = None  # when the current state began, on the rule's clock
    active_at: float | None = None  # when the condition started (pending start)
    keep_firing_since: float | None = None
    value: float | None = None
    detail: str = ""
    seq: int = 0  # number of state changes so far: the webhook's dedup key
    evaluated_to: float | None = None  # the last observation's time (event-time watermark)
    changed_wall: float | None = None  # wall time of the last change: resolved alerts retire by it
    late: bool = False  # the last change was found in a backlog, not live
    note: str = ""  # why a change was forced ("controller restart")
    fired_at: float | None = None  # when it started firing: clearing and back keeps it
    resolved_reason: ResolvedReason | None = None
    run_id: str | None = None  # the server run a run-scoped alert went pending on

    @property
    def key(self) -> str:
        return f"{self.host}/{self.rule}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AlertState:
        known = {f.name for f in fields(cls)}
        alert = cls(**{k: v for k, v in data.items() if k in known})
        if alert.state == "firing" and alert.keep_firing_since is not None:
            alert.state = "clearing"  # stored before clearing was a state of its own
        return alert


def step(alert: AlertState, obs: Observation, for_s: float, keep_firing_for_s: float) -> bool:
    """Advance `alert` by one observation; True when its state changed."""
    alert.value, alert.detail = obs.value, obs.detail or alert.detail
    alert.evaluated_to = obs.t
    if alert.state in ("inactive", "resolved"):
        if not obs.enter:
            return False
        alert.active_at, alert.keep_firing_since = obs.t, None
        return _fire(alert, obs.t) if for_s <= 0 else _move(alert, "pending", obs.t)
    if alert.state == "pending":
        if not obs.enter:
            alert.active_at = None
            return _move(alert, "inactive", obs.t)
        ready = obs.enter if obs.fire is None else obs.fire
        if ready and obs.t - (alert.active_at if alert.active_at is not None else obs.t) >= for_s:
            return _fire(alert, obs.t)
        return False
    if obs.hold:
        alert.keep_firing_since = None
        if alert.state == "clearing":
            return _move(alert, "firing", alert.fired_at if alert.fired_at is not None else obs.t)
        return False
    if alert.keep_firing_since is None:
        alert.keep_firing_since = obs.t
    if obs.t - alert.keep_firing_since >= keep_firing_for_s:
        return _resolve(alert, obs.t, "cleared")
    return _move(alert, "clearing", alert.keep_firing_since) if alert.state == "firing" else False


def resolves_at(alert: AlertState, keep_firing_for_s: float) -> float | None:
    """When a clearing alert resolves if its condition stays false (on the rule's clock)."""
    if alert.state != "clearing" or alert.keep_firing_since is None:
        return None
    return alert.keep_firing_since + keep_firing_for_s


def force(alert: AlertState, t: float, reason: ResolvedReason, note: str = "") -> bool:
    """End an open alert now: firing or clearing resolves with `reason`, pending goes inactive (its
    `for` timer starts from zero at the next observation that holds)."""
    if alert.state not in OPEN_STATES:
        return False
    alert.active_at = None
    if alert.state == "pending":
        _move(alert, "inactive", t)
    else:
        _resolve(alert, t, reason)
    alert.note = note
    return True


def _fire(alert: AlertState, t: float) -> bool:
    alert.fired_at = t
    return _move(alert, "firing", t)


def _resolve(alert: AlertState, t: float, reason: ResolvedReason) -> bool:
    alert.keep_firing_since = None
    _move(alert, "resolved", t)
    alert.resolved_reason = reason
    return True


def _move(alert: AlertState, state: State, t: float) -> bool:
    alert.state, alert.since = state, t
    alert.seq += 1
    alert.note = ""
    alert.resolved_reason = None
    return True
