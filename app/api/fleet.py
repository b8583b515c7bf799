"""GET /api/fleet: every host's run in one row, most urgent first, and the job's totals (read-only)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from kvwatch.app.api.deps import ServicesDep
from kvwatch.app.api.fleet_rows import fleet_rows, kept_for
from kvwatch.app.fleet.attention import ordered
from kvwatch.app.fleet.totals import common_flags, flag_difference, group_totals, job_totals
from kvwatch.app.services import Services

router = APIRouter(tags=["fleet"])


@router.get("/api/fleet")
def get_fleet(services: ServicesDep) -> dict[str, Any]:
    """`hosts`: one row per host (now-row numbers, run, defining flags and their difference from the
    fleet's most common config in `config_diff`, firing/pending `alerts`, diagnosis `verdict`, each
    source's `sources` last-line age in seconds, `attention` rank and `attention_reason`), ordered:
    firing alerts, then trouble (stalled, degraded, retracting, collector failing), then KV-bound,
    then the rest, each in configured order. `totals`: summed tok/s and completions, the job's ETA at
    the summed pace; `groups`: the same per configured `group` (a job). `common_flags`: the config
    most runs have."""
    return fleet_answer(services)


def fleet_answer(services: Services) -> dict[str, Any]:
    rows = fleet_rows(services, kept_for(services))
    common = common_flags(rows)
    for row in rows:
        row["config_diff"] = flag_difference(row["flags"], common)
    return {"hosts": ordered(rows), "totals": job_totals(rows), "groups": group_totals(rows),
            "common_flags": common}
