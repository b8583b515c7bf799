"""One alert's state machine, as plain data: inactive → pending → firing → resolved.

Semantics follow Prometheus (`for`, `keep_firing_for`) with a deadband on top:
- pending starts at the first observation whose `enter` test holds; any observation without it
  drops the alert back to inactive, so the `for` timer restarts (a short spike never fires);
- pending turns firing at the first observation with `t - active_at >= for` whose `fire` test holds
  (`for = 0` fires on the first observation); rules that debounce `enter` over a window keep
  `fire` strict, so a spike shorter than `for` never fires however the window is set;
- while firing, the weaker `hold` test keeps it firing (hysteresis: fire at 0.95, stay while
  >= 0.90), and only after `hold` has failed for `keep_firing_for` does it resolve.
Time is whatever the rule's clock says: log time for rules over log lines, wall time for the rest.
Nothing here ever sees "no data": a rule with no new observation simply does not step.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

State = Literal["inactive", "pending", "firing", "resolved"]
NOTIFIED_STATES = ("firing", "resolved")  # what goes to the webhook; pending only to the page


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

    @property
    def key(self) -> str:
        return f"{self.host}/{self.rule}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AlertState:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def step(alert: AlertState, obs: Observation, for_s: float, keep_firing_for_s: float) -> bool:
    """Advance `alert` by one observation; True when its state changed."""
    alert.value, alert.detail = obs.value, obs.detail or alert.detail
    alert.evaluated_to = obs.t
    if alert.state in ("inactive", "resolved"):
        if not obs.enter:
            return False
        alert.active_at, alert.keep_firing_since = obs.t, None
        return _move(alert, "firing" if for_s <= 0 else "pending", obs.t)
    if alert.state == "pending":
        if not obs.enter:
            alert.active_at = None
            return _move(alert, "inactive", obs.t)
        ready = obs.enter if obs.fire is None else obs.fire
        if ready and obs.t - (alert.active_at if alert.active_at is not None else obs.t) >= for_s:
            return _move(alert, "firing", obs.t)
        return False
    if obs.hold:
        alert.keep_firing_since = None
        return False
    if alert.keep_firing_since is None:
        alert.keep_firing_since = obs.t
    if obs.t - alert.keep_firing_since >= keep_firing_for_s:
        alert.keep_firing_since = None
        return _move(alert, "resolved", obs.t)
    return False


def force(alert: AlertState, t: float, note: str) -> bool:
    """End a pending or firing alert now (the controller re-arms a host after a restart)."""
    if alert.state not in ("pending", "firing"):
        return False
    alert.active_at = alert.keep_firing_since = None
    _move(alert, "resolved" if alert.state == "firing" else "inactive", t)
    alert.note = note
    return True


def _move(alert: AlertState, state: State, t: float) -> bool:
    alert.state, alert.since = state, t
    alert.seq += 1
    alert.note = ""
    return True
