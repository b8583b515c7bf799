"""GET /api/hosts: every configured host with its collection health."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any
from zoneinfo import ZoneInfo

from fastapi import APIRouter

from kvwatch.app.api.deps import ServicesDep
from kvwatch.app.api.derived import eta
from kvwatch.app.errors import StoreUnavailable
from kvwatch.app.pipeline.heartbeat import stored_health
from kvwatch.app.services import Services

router = APIRouter(tags=["hosts"])


@router.get("/api/hosts")
def list_hosts(services: ServicesDep) -> list[dict[str, Any]]:
    """Configured hosts, their connection state, per-source health and completion progress; `store`
    says whether the database takes what they collect. While it does not (PostgreSQL gone), the
    hosts are still listed, from what the collectors know, and what only the store knows is null."""
    store = services.store.health()
    out = []
    live = services.registries  # one read: the hosts and their collectors from the same reload
    for host in live.config.hosts:
        collector = live.collectors.get(host.name)
        stored: dict[str, Any] = {"metrics": None, "progress": None}
        if store["state"] == "ok":
            try:
                stored = {"metrics": services.store.metrics(host.name),
                          "progress": eta(services.store, host.name, host.target_completions, time.time())}
            except StoreUnavailable as exc:  # gone since the last commit: the rest of the answer still holds
                store = {"state": "unreachable", "error": str(exc)}
        # A web-only app (scale-out) shows what the host's collector process last wrote to the store.
        health = collector.health_dict() if collector else _stored_health(services, host.name, store)
        out.append(
            {
                "name": host.name,
                "ssh": host.ssh,
                "target_completions": host.target_completions,
                **stored,
                **health,
                **configured_zone(host.timezone, health),
                "store": store,
            }
        )
    return out


def _stored_health(services: Services, host: str, store: dict[str, Any]) -> dict[str, Any]:
    if store["state"] != "ok":
        return {"state": "unknown", "last_error": "the store is unreachable: this host's collector health is in it"}
    return stored_health(services.store, host)


def configured_zone(zone: str | None, health: dict[str, Any]) -> dict[str, Any]:
    """A `timezone` key overrides detection: shown as the host's zone, the detected one kept beside."""
    if zone is None:
        return {"timezone_from": "detected" if health.get("utc_offset_s") is not None else "assumed"}
    now = dt.datetime.now(ZoneInfo(zone)).utcoffset()
    return {
        "timezone": zone,
        "utc_offset_s": int(now.total_seconds()) if now is not None else None,
        "timezone_from": "config",
        "detected_timezone": health.get("timezone"),
        "detected_utc_offset_s": health.get("utc_offset_s"),
    }
