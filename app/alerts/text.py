"""What a person reads: an alert as the API's JSON, its one-line summary and its chart link.

Times are shown in UTC, which reproduces the log's own wall-clock stamps (naive log timestamps are
stored as if UTC). A value is always shown against the limit that applies in the alert's state: a
pending alert against `fire_at`, a firing one against `stay_at` once it is below `fire_at`, and a
clearing one (its value on the good side) says so and when it resolves.
"""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import urlencode

from kvwatch.app.alerts.rules import RuleSpec
from kvwatch.app.alerts.state import AlertState, resolves_at

CHART_BEFORE_S = 300  # the chart window opens this long before the condition started
CHART_AFTER_S = 300  # and closes this long after a resolution
REASON_TEXT = {
    "cleared": "condition cleared",
    "run_ended": "the server run ended",
    "rearmed": "host re-armed",
    "rule_disabled": "rule disabled",
    "host_removed": "host removed",
}


def public(alert: AlertState, rule: RuleSpec | None, *, muted: bool = False) -> dict[str, Any]:
    """The GET /api/alerts item (docs/http.md's fields first) and the SSE `alert` payload."""
    return {
        "rule": alert.rule,
        "host": alert.host,
        "state": alert.state,
        "since": alert.since,
        "value": alert.value,
        "severity": rule.severity if rule else "warn",
        "title": rule.title if rule else alert.rule,
        "summary": summary(alert, rule),
        "detail": alert.detail,
        "active_at": alert.active_at,
        "clock": rule.clock if rule else "event",
        "link": chart_link(alert),  # relative: the page is wherever it was opened
        "muted": muted,
        "late": alert.late,
        "note": alert.note,
        "seq": alert.seq,
        "threshold": threshold(rule),
        "headline": headline(alert, rule),
        "resolved_reason": alert.resolved_reason if alert.state == "resolved" else None,
        "resolves_at": clearing_end(alert, rule),
        "resolves_in_s": resolves_in(alert, rule),
        "run_id": alert.run_id,
    }


def clearing_end(alert: AlertState, rule: RuleSpec | None) -> float | None:
    """When a clearing alert resolves if its condition stays false (on the rule's clock)."""
    return resolves_at(alert, rule.keep_firing_for_s if rule is not None else 0.0)


def resolves_in(alert: AlertState, rule: RuleSpec | None) -> float | None:
    """Seconds (on the rule's clock, as of its last observation) until a clearing alert resolves."""
    end = clearing_end(alert, rule)
    if end is None or alert.evaluated_to is None:
        return None
    return max(0.0, end - alert.evaluated_to)


def clearing_text(alert: AlertState, rule: RuleSpec | None) -> str:
    """"clearing — resolves in 40s" for a clearing alert, else ""."""
    if alert.state != "clearing":
        return ""
    left = resolves_in(alert, rule)
    return "clearing" if left is None else f"clearing — resolves in {duration_text(left)}"


def threshold(rule: RuleSpec | None) -> float | None:
    """The number a threshold rule fires at (`fire_at`), else None."""
    return float(rule.param("fire_at")) if rule is not None and rule.kind == "threshold" else None


def headline(alert: AlertState, rule: RuleSpec | None) -> str:
    """The rule and its value against its limit, as the banner shows it: "KV token usage high 0.97 ≥ 0.95"."""
    title = rule.title if rule else alert.rule
    limit = state_limit(alert, rule)
    clearing = clearing_text(alert, rule)
    if limit is not None and alert.value is not None:
        text = f"{title} {alert.value:.2f} {'≥' if alert.value >= limit else '<'} {limit:.2f}"
        return f"{text} ({clearing})" if clearing else text
    value = value_text(rule, alert.value)
    condition = condition_text(rule)
    parts = [title, f"({value})" if value else "", f"[{condition}]" if condition else ""]
    parts.append(f"({clearing})" if clearing else "")
    return " ".join(part for part in parts if part)


def state_limit(alert: AlertState, rule: RuleSpec | None) -> float | None:
    """The limit a threshold rule's value is shown against: `fire_at`, except for a firing alert held
    by hysteresis (between `stay_at` and `fire_at`) and a clearing one, which `stay_at` decides."""
    limit = threshold(rule)
    if limit is None or rule is None or alert.value is None:
        return limit
    held = alert.state == "firing" and alert.value < limit
    return float(rule.param("stay_at")) if held or alert.state == "clearing" else limit


def summary(alert: AlertState, rule: RuleSpec | None) -> str:
    title = rule.title if rule else alert.rule
    parts = [f"{alert.host}: {title}"]
    value = value_text(rule, alert.value)
    if value:
        parts.append(f"({value})")
    condition = condition_text(rule)
    if condition:
        parts.append(f"[{condition}]")
    if alert.since is not None:
        parts.append(f"{alert.state} since {clock_text(alert.since)}")
    left = resolves_in(alert, rule)
    if left is not None:
        parts.append(f"(resolves in {duration_text(left)})")
    text = " ".join(parts)
    if alert.state == "resolved" and alert.resolved_reason:
        text += f"; resolved: {REASON_TEXT.get(alert.resolved_reason, alert.resolved_reason)}"
    if alert.detail:
        text += f"; {alert.detail}"
    if alert.note:
        text += f" ({alert.note})"
    return text


def value_text(rule: RuleSpec | None, value: float | None) -> str:
    if value is None or rule is None:
        return "" if value is None else f"{value:g}"
    kind = rule.kind
    if kind == "threshold":
        return f"{value:.1%}"
    if kind == "queue":
        return f"{value:.0f} waiting"
    if kind == "events":
        return f"{value:.0f} events"
    if kind == "throughput":
        return f"{value:.0f} tok/s"
    return duration_text(value)


def condition_text(rule: RuleSpec | None) -> str:
    if rule is None:
        return ""
    if rule.kind == "threshold":
        return (
            f"fires at >= {rule.param('fire_at'):.0%} for {duration_text(rule.for_s)}, "
            f"stays firing while >= {rule.param('stay_at'):.0%}"
        )
    if rule.kind == "throughput":
        return f"fires {rule.param('drop_pct'):.0f}% below the run's steady-state median"
    if "after" in rule.params:
        return f"after {duration_text(rule.param('after'))}"
    return ""


def chart_link(alert: AlertState) -> str:
    start = alert.active_at if alert.active_at is not None else alert.since
    if start is None:
        return f"/?{urlencode({'host': alert.host})}"
    if alert.state == "resolved" and alert.since is not None:
        end = alert.since + CHART_AFTER_S
    else:
        end = max(alert.evaluated_to or start, alert.since or start) + 60
    query = {"host": alert.host, "from": int(start - CHART_BEFORE_S), "to": int(end)}
    return f"/?{urlencode(query)}"


def clock_text(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def duration_text(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s" if secs else f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
