"""GET /api/hosts/{name}/status: a host's state now in one answer (`kvwatch status`, `kvwatch wait`)."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter

from kvwatch.app.api.deps import ServicesDep, require_host
from kvwatch.app.api.host_status import host_status

router = APIRouter(tags=["hosts"])


@router.get("/api/hosts/{name}/status")
def get_host_status(services: ServicesDep, name: str) -> dict[str, Any]:
    """`host`, `run` {`id`, `flags`, `state`, ...}, the newest `gen_throughput`, `token_usage`,
    `running_req`, `queue_req` (times in `sampled_at`), `gen_throughput_mean` over `mean_window_s`
    (the last 5 minutes, or the current run's life when it is younger: never two runs; the same
    number is in `gen_throughput_mean_5min`), `completions` (and `completions_by_dataset`),
    `completion_rate` (per second, trailing 60 s, within the run), `eta_s` to `target_completions`
    (at the run's pace), pending, firing and clearing `alerts`, `client` (last progress, its age, `silent`),
    `collector` state, `as_of` (this answer's time, epoch seconds). `verdict` is always null here:
    the diagnosis is GET /api/hosts/{name}/diagnosis."""
    require_host(services, name)
    host = next(h for h in services.config.hosts if h.name == name)
    return host_status(services, host, time.time())
