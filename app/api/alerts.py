"""The alerts: GET /api/alerts, and what a person does about one from the page (token required):
POST /api/alerts/{host}/{rule}/ack, .../mute {"for_s": 3600}, .../unmute."""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query
from pydantic import BaseModel, Field

from kvwatch.app.alerts import AlertService, alerts_view
from kvwatch.app.alerts.listing import RESOLVED_RETENTION_S
from kvwatch.app.alerts.silences import MAX_SILENCE_S
from kvwatch.app.api.deps import ServicesDep, require_host
from kvwatch.app.api.restart import require_same_origin, require_token

router = APIRouter(tags=["alerts"])
PROTECTED = [Depends(require_token), Depends(require_same_origin)]
DEFAULT_MUTE_S = 3600.0


class MuteBody(BaseModel):
    for_s: float = Field(DEFAULT_MUTE_S, gt=0, le=MAX_SILENCE_S, description="how long no webhook is sent, seconds")


@router.get("/api/alerts")
def list_alerts(
    services: ServicesDep,
    host: str | None = None,
    resolved_within: Annotated[float, Query(ge=0, le=30 * 86400)] = RESOLVED_RETENTION_S,
) -> list[dict[str, Any]]:
    """`[{"rule", "host", "state", "since", "value", ...}]`: firing first. `since` is when the
    alert entered its state, in epoch seconds on the rule's clock (`clock`: "event" = log time);
    `link` opens the chart window around it; resolved alerts stay listed for `resolved_within` s.
    `headline` is the rule with its value against its `threshold`; `acknowledged` and `muted_until`
    are what was done from the page. `state` is pending, firing, clearing (the condition is false
    and the rule waits out `keep_firing_for` until `resolves_at`, `resolves_in_s` from its last
    evaluation) or resolved, with `resolved_reason` (cleared, run_ended, rearmed, rule_disabled,
    host_removed); `run_id` is the server run a run-scoped alert opened on."""
    if host is not None:
        require_host(services, host)
    return alerts_view(services, host, resolved_within)


@router.post("/api/alerts/{host}/{rule}/ack", dependencies=PROTECTED)
def acknowledge(host: str, rule: str, services: ServicesDep) -> dict[str, Any]:
    """Acknowledge the open (pending, firing or clearing) alert: listed still, but quiet on the page; 409 when
    the alert is not open. Every tab hears it as an SSE `alert` event."""
    alerting = _alerting(services)
    alert = _current(alerting, host, rule)
    alerting.engine.silences.acknowledge(host, rule, alert, time.time())
    return _announce(alerting, host, rule)


@router.post("/api/alerts/{host}/{rule}/mute", dependencies=PROTECTED)
def mute(host: str, rule: str, services: ServicesDep, body: MuteBody | None = None) -> dict[str, Any]:
    """No webhook message for this alert for `for_s` seconds (default 1 h), whatever it does."""
    alerting = _alerting(services)
    _current(alerting, host, rule)
    now = time.time()
    alerting.engine.silences.mute(host, rule, now + (body.for_s if body is not None else DEFAULT_MUTE_S), now)
    return _announce(alerting, host, rule)


@router.post("/api/alerts/{host}/{rule}/unmute", dependencies=PROTECTED)
def unmute(host: str, rule: str, services: ServicesDep) -> dict[str, Any]:
    """End a mute now."""
    alerting = _alerting(services)
    _current(alerting, host, rule)
    alerting.engine.silences.unmute(host, rule, time.time())
    return _announce(alerting, host, rule)


def _alerting(services: ServicesDep) -> AlertService:
    if services.alerts is None:
        raise HTTPException(503, detail="alerting is not running in this process")
    return services.alerts


def _current(alerting: AlertService, host: str, rule: str) -> dict[str, Any]:
    try:
        return alerting.engine.current(host, rule)
    except KeyError as exc:
        raise HTTPException(404, detail=str(exc.args[0])) from None


def _announce(alerting: AlertService, host: str, rule: str) -> dict[str, Any]:
    alerting.engine.announce({f"{host}/{rule}"})
    return alerting.engine.current(host, rule)
