"""What a person reads: an alert as the API's JSON, its one-line summary and its chart link.

Times are shown in UTC, which reproduces the log's own wall-clock stamps (naive log timestamps are
stored as if UTC).
"""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import urlencode

from kvwatch.app.alerts.rules import RuleSpec
from kvwatch.app.alerts.state import AlertState

CHART_BEFORE_S = 300  # the chart window opens this long before the condition started
CHART_AFTER_S = 300  # and closes this long after a resolution


def public(alert: AlertState, rule: RuleSpec | None, *, muted: bool = False) -> dict[str, Any]:
    """The GET /api/alerts item (DESIGN.md fields first, then ours) and the SSE `alert` payload."""
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
    }


def threshold(rule: RuleSpec | None) -> float | None:
    """The number a threshold rule fires at (`fire_at`), else None."""
    return float(rule.param("fire_at")) if rule is not None and rule.kind == "threshold" else None


def headline(alert: AlertState, rule: RuleSpec | None) -> str:
    """The rule and its value against its limit, as the banner shows it: "KV token usage high 0.97 ≥ 0.95"."""
    title = rule.title if rule else alert.rule
    limit = threshold(rule)
    if limit is not None and alert.value is not None:
        return f"{title} {alert.value:.2f} {'≥' if alert.value >= limit else '<'} {limit:.2f}"
    value = value_text(rule, alert.value)
    condition = condition_text(rule)
    parts = (title, f"({value})" if value else "", f"[{condition}]" if condition else "")
    return " ".join(part for part in parts if part)


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
    text = " ".join(parts)
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
