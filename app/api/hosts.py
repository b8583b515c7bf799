"""GET /api/hosts: every configured host with its collection health."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.api.deps import ServicesDep

router = APIRouter(tags=["hosts"])


@router.get("/api/hosts")
def list_hosts(services: ServicesDep) -> list[dict[str, Any]]:
    """Configured hosts, their connection state and per-source health."""
    out = []
    for host in services.config.hosts:
        collector = services.collectors.get(host.name)
        health = collector.health.as_dict() if collector else {"state": "stopped", "sources": {}}
        out.append(
            {
                "name": host.name,
                "ssh": host.ssh,
                "target_completions": host.target_completions,
                "metrics": services.store.metrics(host.name),
                **health,
            }
        )
    return out
