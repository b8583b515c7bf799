"""Which alerts a list shows and in what order: the engine's snapshot and the stored states alike."""

from __future__ import annotations

from typing import Any

from kvwatch.app.alerts.state import OPEN_STATES, AlertState

RESOLVED_RETENTION_S = 900.0  # resolved alerts stay listed this long (Prometheus keeps 15 m too)
STATE_ORDER = {"firing": 0, "clearing": 1, "pending": 2, "resolved": 3, "inactive": 4}
SEVERITY_ORDER = {"page": 0, "warn": 1, "info": 2}


def sort_alerts(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Firing first, then clearing, pending, resolved; pages before warnings; newest first."""
    items.sort(key=lambda a: -(a["since"] or 0.0))
    items.sort(key=lambda a: (STATE_ORDER.get(a["state"], 9), SEVERITY_ORDER.get(a["severity"], 9)))
    return items


def visible(alert: AlertState, now: float, retention_s: float) -> bool:
    """Open alerts always; resolved ones for `retention_s` after they resolved (wall clock)."""
    if alert.state in OPEN_STATES:
        return True
    return alert.state == "resolved" and now - (alert.changed_wall or 0.0) <= retention_s
