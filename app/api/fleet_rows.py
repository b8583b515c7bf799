"""One fleet row per host, from what the host's own views already answer (status, diagnosis, health)."""

from __future__ import annotations

import threading
import time
from typing import Any

from kvwatch.app.api.host_status import host_health, host_status
from kvwatch.app.config import HostConfig
from kvwatch.app.diagnosis import diagnose_host
from kvwatch.app.diagnosis.sentence import LABELS
from kvwatch.app.errors import KvwatchError
from kvwatch.app.services import Services

# A verdict reads the run's recent window: kept this long per host, so a fleet answer each second
# costs one diagnosis per host every VERDICT_TTL_S, not one per host per answer.
VERDICT_TTL_S = 10.0
NOW_FIELDS = ("gen_throughput", "token_usage", "running_req", "queue_req", "completions", "completion_rate",
              "completion_pace", "eta_s", "target_completions", "gen_throughput_mean", "mean_window_s", "as_of")


class VerdictCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[tuple[str, str | None], tuple[float, str | None]] = {}

    def verdict(self, services: Services, host: HostConfig, run_id: str | None, now: float) -> str | None:
        key = (host.name, run_id)  # a new run is asked at once, not after its predecessor's TTL
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None and now - kept[0] < VERDICT_TTL_S:
            return kept[1]
        try:
            verdict: str | None = diagnose_host(services.store, host, now=now).verdict
        except KvwatchError:  # one host's unreadable window never hides the fleet
            verdict = None
        with self._lock:
            self._kept = {k: v for k, v in self._kept.items() if k[0] != host.name}
            self._kept[key] = (now, verdict)
        return verdict


def host_row(services: Services, host: HostConfig, verdicts: VerdictCache, now: float) -> dict[str, Any]:
    status = host_status(services, host, now)
    run = status.get("run")
    health = host_health(services, host.name)
    verdict = verdicts.verdict(services, host, run["id"] if run else None, now)
    return {
        "host": host.name,
        "group": host.group,
        "collector_state": health.get("state"),
        "run": None if run is None else {"id": run["id"], "state": run["state"], "started_at": run["started_at"]},
        "flags": None if run is None else run["defining_flags"],
        **{field: status.get(field) for field in NOW_FIELDS},
        "alerts": [{"rule": a["rule"], "state": a["state"], "headline": a.get("headline")} for a in status["alerts"]],
        "verdict": verdict,
        "verdict_label": LABELS.get(verdict or "", verdict),
        "sources": {name: source.get("last_line_age_s") for name, source in (health.get("sources") or {}).items()},
    }


def fleet_rows(services: Services, verdicts: VerdictCache, now: float | None = None) -> list[dict[str, Any]]:
    clock = time.time() if now is None else now
    return [host_row(services, host, verdicts, clock) for host in services.config.hosts]
