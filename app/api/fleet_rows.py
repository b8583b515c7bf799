"""One fleet row per host, from what the host's own views already answer (status, diagnosis, health)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any
from weakref import WeakKeyDictionary

from kvwatch.app.api.host_status import NOW_METRICS, host_health, host_status
from kvwatch.app.config import HostConfig
from kvwatch.app.diagnosis import host_verdict
from kvwatch.app.diagnosis.sentence import LABELS
from kvwatch.app.errors import KvwatchError
from kvwatch.app.fleet.sparks import SPARK_WINDOW_S, bucket_means
from kvwatch.app.metrics_catalog.names import COMPLETION_RATE, COMPLETIONS, GEN_THROUGHPUT, TOKEN_USAGE
from kvwatch.app.services import Services

# A verdict reads the run's recent window: kept this long per host, so a fleet answer each second
# costs one diagnosis per host every VERDICT_TTL_S, not one per host per answer.
VERDICT_TTL_S = 10.0
NOW_FIELDS = (*NOW_METRICS, COMPLETIONS, COMPLETION_RATE, "completion_pace", "eta_s", "target_completions",
              "gen_throughput_mean", "mean_window_s", "as_of")


SPARK_TTL_S = 5.0
SPARK_METRICS = (GEN_THROUGHPUT, TOKEN_USAGE)


class Kept:
    """Per host, the last answer of something costly and when it was made; asked again after `ttl` or
    when its `key` changes (a new run is diagnosed at once, not after its predecessor's TTL).

    One maker a host at a time: a page that opens asks `/api/fleet` while the fleet keeper reads every
    row for its first event, and both used to diagnose all hosts, twice the cold work on one GIL. A
    caller that finds the host being made waits for that answer instead."""

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._lock = threading.Lock()
        self._kept: dict[str, tuple[object, float, Any]] = {}
        self._making: dict[str, threading.Lock] = {}

    def get(self, host: str, key: object, now: float, make: Callable[[], Any]) -> Any:
        with self._lock:
            making = self._making.setdefault(host, threading.Lock())
        with making:
            with self._lock:
                kept = self._kept.get(host)
            if kept is not None and kept[0] == key and now - kept[1] < self.ttl:
                return kept[2]
            value = make()
            with self._lock:
                self._kept[host] = (key, now, value)
            return value


class VerdictCache:
    """What the fleet keeps between answers: each host's verdict and sparklines."""

    def __init__(self) -> None:
        self.verdicts = Kept(VERDICT_TTL_S)
        self.sparks = Kept(SPARK_TTL_S)

    def verdict(self, services: Services, host: HostConfig, run_id: str | None, now: float) -> str | None:
        def diagnosed() -> str | None:
            try:
                return host_verdict(services.store, host, now=now)
            except KvwatchError:  # one host's unreadable window never hides the fleet
                return None

        verdict: str | None = self.verdicts.get(host.name, run_id, now, diagnosed)
        return verdict

    def spark(self, services: Services, host: str, now: float) -> dict[str, list[float | None]]:
        def read() -> dict[str, list[float | None]]:
            since = now - SPARK_WINDOW_S
            return {metric: bucket_means(*services.store.series(host, metric, since=since), end=now)
                    for metric in SPARK_METRICS}

        sparks: dict[str, list[float | None]] = self.sparks.get(host, None, now, read)
        return sparks


_KEPT: WeakKeyDictionary[Services, VerdictCache] = WeakKeyDictionary()  # per app: tests run many in one process


def kept_for(services: Services) -> VerdictCache:
    """The app's one cache of verdicts and sparklines, shared by /api/fleet and the live fleet rows."""
    return _KEPT.setdefault(services, VerdictCache())


def host_row(services: Services, host: HostConfig, verdicts: VerdictCache, now: float) -> dict[str, Any]:
    status = host_status(services, host, now)
    run = status.get("run")
    health = host_health(services, host.name)
    verdict = verdicts.verdict(services, host, run["id"] if run else None, now)
    ages = {name: source.get("last_line_age_s") for name, source in (health.get("sources") or {}).items()}
    return {
        "host": host.name,
        "name": host.name,  # as GET /api/hosts names it
        "group": host.group,
        "collector_state": health.get("state"),
        "run": None if run is None else {"id": run["id"], "state": run["state"], "started_at": run["started_at"]},
        "flags": None if run is None else run["defining_flags"],
        **{field: status.get(field) for field in NOW_FIELDS},
        "alerts": [{"rule": a["rule"], "state": a["state"], "headline": a.get("headline")} for a in status["alerts"]],
        "verdict": verdict,
        "verdict_label": LABELS.get(verdict or "", verdict),
        "spark": verdicts.spark(services, host.name, now),
        "sources": ages,
        "sources_at": {name: None if age is None else now - age for name, age in ages.items()},
    }


def fleet_rows(services: Services, verdicts: VerdictCache, now: float | None = None) -> list[dict[str, Any]]:
    clock = time.time() if now is None else now
    return [host_row(services, host, verdicts, clock) for host in services.config.hosts]
