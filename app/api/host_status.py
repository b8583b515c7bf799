"""One host's state now, in one answer: what `kvwatch status` and `kvwatch wait` read.

Each server number is the newest stored sample of the host's series (DP ranks combined, as
/api/series stores them), with that sample's time in `sampled_at`: the same number /api/series
answers last for a window ending there. The windowed numbers never reach back before the current
run's start (another config's numbers are not this one's): `gen_throughput_mean` over the last
MEAN_WINDOW_S or the whole run when it is younger (`mean_window_s` says how long);
`completion_rate` is /api/series's `completion_rate` at the newest completion count (completions
per second over the trailing RATE_WINDOW_S) computed on the run's counts alone; `eta_s` is the ETA
/api/series attaches to completions (the pace of the last ETA_WINDOW_S), its pace from the run alone.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from kvwatch.app.alerts import OPEN_STATES, alerts_view
from kvwatch.app.api.derived import RATE_WINDOW_S, eta, trailing_rate
from kvwatch.app.config import HostConfig
from kvwatch.app.flags.schema import FlagError, Schema, bundled_versions, load_bundled
from kvwatch.app.metrics_catalog.names import (
    CLIENT_DONE,
    CLIENT_TOTAL,
    COMPLETION_RATE,
    COMPLETIONS,
    GEN_THROUGHPUT,
    QUEUE_REQ,
    RUNNING_REQ,
    TOKEN_USAGE,
)
from kvwatch.app.pipeline.heartbeat import stored_health
from kvwatch.app.runs import list_runs
from kvwatch.app.services import Services
from kvwatch.app.store.base import Store

NOW_METRICS = (GEN_THROUGHPUT, TOKEN_USAGE, RUNNING_REQ, QUEUE_REQ)
MEAN_WINDOW_S = 300.0  # the longest window of the mean of generation throughput
CLIENT_SILENT_S = 120.0  # a progress bar quiet this long while outputs grow is flagged
ALERT_FIELDS = ("rule", "state", "since", "value", "severity", "title", "summary", "headline", "resolves_in_s")
# Name the model or switch on reporting rather than choose a configuration.
NOT_DEFINING = frozenset({"model-path", "tokenizer-path", "served-model-name", "enable-metrics"})


def latest_values(store: Store, host: str) -> tuple[dict[str, float | None], dict[str, float]]:
    """The newest sample of each server metric, and when it was taken (epoch seconds)."""
    values: dict[str, float | None] = {}
    times: dict[str, float] = {}
    for metric in NOW_METRICS:
        newest = store.latest(host, metric)
        values[metric] = None if newest is None else newest[1]
        if newest is not None:
            times[metric] = newest[0]
    return values, times


def window_start(end: float, width: float, run_start: float | None) -> float | None:
    """Where a trailing window of `width` ending at `end` begins: never before the run's start; None
    when `end` itself is before it (the newest sample is the previous run's)."""
    if run_start is None:
        return end - width
    return None if end <= run_start else max(end - width, run_start)


def recent_mean(
    store: Store, host: str, metric: str, end: float, window: float, run_start: float | None = None
) -> tuple[float | None, float | None]:
    """The plain mean of the samples in (start, end], and the seconds it covers (end - start)."""
    start = window_start(end, window, run_start)
    if start is None:
        return None, None
    _, v = store.series(host, metric, since=start, until=end)
    return (float(np.mean(v)), end - start) if len(v) else (None, None)


def completion_rate_now(store: Store, host: str, newest: float, run_start: float | None = None) -> float | None:
    """/api/series's completion_rate at the newest completion count (trailing_rate's last point), from
    the counts since the run's start only."""
    start = window_start(newest, 2 * RATE_WINDOW_S, run_start)
    if start is None:
        return None
    t, v = store.series(host, COMPLETIONS, since=start, until=newest)
    _, rate = trailing_rate(t, v, RATE_WINDOW_S)
    return float(rate[-1]) if len(rate) else None


def completions_by_dataset(store: Store, host: str) -> dict[str, float]:
    """Lines in each dataset's output files; a dataset is the folder its file sits in."""
    counts: dict[str, float] = {}
    for path in store.ranks(host, COMPLETIONS):
        newest = store.latest(host, COMPLETIONS, path) if path else None
        if newest is not None:
            dataset = os.path.basename(os.path.dirname(path)) or path
            counts[dataset] = counts.get(dataset, 0.0) + newest[1]
    return counts


def client_progress(store: Store, host: str, health: dict[str, Any], now: float) -> dict[str, Any] | None:
    """The client's last tqdm progress (done/total) and its age; `silent` when the client log has been
    quiet for CLIENT_SILENT_S while the output files kept growing (Python buffering its stdout)."""
    done = store.latest(host, CLIENT_DONE)
    total = store.latest(host, CLIENT_TOTAL)
    outputs = store.latest(host, COMPLETIONS)
    age = None if done is None else now - done[0]
    outputs_growing = outputs is not None and now - outputs[0] < CLIENT_SILENT_S
    silent = bool(health.get("client_log_stale")) or (
        outputs_growing and (age is None or age > CLIENT_SILENT_S) and "client_log" in health.get("sources", {})
    )
    if done is None and not silent:
        return None
    return {
        "done": None if done is None else done[1],
        "total": None if total is None else total[1],
        "age_s": age,
        "silent": silent,
    }


def flag_schema(host: HostConfig) -> Schema | None:
    """The bundled schema the host's controller is pinned to, else the newest bundled one."""
    pinned = host.restart.flags_schema
    versions = bundled_versions()
    version = pinned if pinned in versions else (versions[-1] if versions else None)
    return None if version is None else load_bundled(version)


def defining_flags(flags: dict[str, Any], schema: Schema | None) -> dict[str, Any]:
    """The flags that make this config this config: values other than SGLang's default. SGLang logs
    every argument at start (about 500); flags the schema does not know are left out, as are the model."""
    if schema is None:
        return {k: v for k, v in flags.items() if k not in NOT_DEFINING}
    chosen = {}
    for name, value in flags.items():
        try:
            default = schema.option(name).default
        except KeyError:
            continue
        if name not in NOT_DEFINING and value != default and not (default is None and value in (None, False)):
            chosen[name] = value
    return chosen


def current_run(store: Store, host: HostConfig) -> dict[str, Any] | None:
    runs = list_runs(store, host.name)
    if not runs:
        return None
    run = runs[-1]
    try:
        schema = flag_schema(host)
    except FlagError:
        schema = None
    return {"id": run.id, "flags": run.flags, "defining_flags": defining_flags(run.flags, schema),
            "state": run.state, "started_at": run.started_at, "ready_at": run.ready_at, "ended_at": run.ended_at,
            "capacity": run.capacity}


def host_health(services: Services, host: str) -> dict[str, Any]:
    collector = services.collectors.get(host)
    return collector.health.as_dict() if collector else stored_health(services.store, host)


def host_status(services: Services, host: HostConfig, now: float) -> dict[str, Any]:
    """The `kvwatch status --json` object of one host (the fields docs/http.md names first)."""
    store = services.store
    values, sampled_at = latest_values(store, host.name)
    run = current_run(store, host)
    run_start = None if run is None else float(run["started_at"])
    newest_count = store.latest(host.name, COMPLETIONS)
    rate = completion_rate_now(store, host.name, newest_count[0], run_start) if newest_count else None
    if newest_count is not None:
        sampled_at[COMPLETIONS] = newest_count[0]
    if rate is not None and newest_count is not None:
        sampled_at[COMPLETION_RATE] = newest_count[0]
    throughput_at = sampled_at.get(GEN_THROUGHPUT)
    mean, covered = (None, None) if throughput_at is None else recent_mean(
        store, host.name, GEN_THROUGHPUT, throughput_at, MEAN_WINDOW_S, run_start)
    progress = eta(store, host.name, host.target_completions, now, since=run_start)
    health = host_health(services, host.name)
    alerts = [a for a in alerts_view(services, host.name, 0.0) if a.get("state") in OPEN_STATES]
    return {
        "host": host.name,
        "run": run,
        **values,
        COMPLETIONS: None if newest_count is None else newest_count[1],
        COMPLETION_RATE: rate,
        "eta_s": None if progress is None else progress["eta_s"],
        "alerts": [{k: a.get(k) for k in ALERT_FIELDS} for a in alerts],
        "verdict": None,  # the diagnosis endpoint's; `kvwatch status` asks it separately
        "as_of": now,
        "gen_throughput_mean": mean,
        "mean_window_s": covered,
        "gen_throughput_mean_5min": mean,  # the field's first name, kept: the same mean, never over two runs
        "sampled_at": sampled_at,
        "target_completions": host.target_completions,
        "completions_by_dataset": completions_by_dataset(store, host.name),
        "completion_pace": None if progress is None else progress["rate_per_s"],
        "client": client_progress(store, host.name, health, now),
        "collector": {"state": health.get("state"), "last_error": health.get("last_error")},
    }
