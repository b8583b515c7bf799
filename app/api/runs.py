"""GET /api/runs: the runs of a host (one server start each), with flags, capacity and state; and
GET /api/runs/{run_id}/alike: the same config's runs on the other hosts, to compare side by side."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from kvwatch.app.api.deps import ServicesDep, require_host
from kvwatch.app.api.host_status import defining_flags, flag_schema
from kvwatch.app.runs import find_runs, list_runs

router = APIRouter(tags=["runs"])


@router.get("/api/runs")
def get_runs(services: ServicesDep, host: str | None = None) -> list[dict[str, Any]]:
    """Runs in start order: `id`, `host`, `flags`, `started_at`, `ended_at` (null: still on), `capacity`,
    `state` (starting|running|ended|failed), `source` (log|controller). Without `host`: every host's."""
    if host is not None:
        require_host(services, host)
    hosts = [host] if host is not None else [h.name for h in services.config.hosts]
    return [run.as_dict() for name in hosts for run in list_runs(services.store, name)]


@router.get("/api/runs/{run_id}/alike")
def get_alike(services: ServicesDep, run_id: str) -> dict[str, Any]:
    """`run` and, for each other host in configured order, its newest run with the same defining flags
    (values other than SGLang's defaults, the model left out) in `alike`; `defining_flags` says which.
    A run that failed to start is never alike: it has nothing to compare."""
    names = [h.name for h in services.config.hosts]
    (run,) = find_runs(services.store, names, [run_id])
    by_name = {h.name: h for h in services.config.hosts}
    wanted = defining_flags(run.flags, flag_schema(by_name[run.host]))
    alike = []
    for host in services.config.hosts:
        if host.name == run.host:
            continue
        schema = flag_schema(host)
        same = [r for r in list_runs(services.store, host.name)
                if r.state != "failed" and defining_flags(r.flags, schema) == wanted]
        if same:
            alike.append(same[-1].as_dict())
    return {"run": run.as_dict(), "defining_flags": wanted, "alike": alike}
