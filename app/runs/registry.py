"""Runs of a host, as the rest of the app sees them: detected from the log, merged with controller runs,
and kept as store documents of kind "run" (key: the run id).

Detection is recomputed from the stored events on each call (it is a pure function of them), so a run
never goes stale; the documents are written so other readers (and the next process) find the runs
without recomputing, and they are the only record of a controller-started run that has not logged yet.
"""

from __future__ import annotations

from typing import Any

from kvwatch.app.errors import UnknownRun
from kvwatch.app.metrics_catalog.names import GEN_THROUGHPUT, TOKEN_USAGE
from kvwatch.app.runs.detect import detect_runs
from kvwatch.app.runs.model import Run, normalize_flags, run_id
from kvwatch.app.store.base import Store

RUN_DOC = "run"
# A 1T-parameter model takes minutes to load: the server_args dump of a controller restart can come
# well after the restart was recorded.
CONTROLLER_MATCH_S = 1800.0
CLOCK_SLACK_S = 5.0
EVENT_LIMIT = 1_000_000
FIRST_SAMPLE_METRICS = (TOKEN_USAGE, GEN_THROUGHPUT)


def record_controller_run(
    store: Store, host: str, flags: dict[str, Any], started_at: float, log_path: str | None = None
) -> str:
    """Called by the controller when it (re)starts a server: the run exists before the server logs."""
    taken = {d["key"] for d in store.documents(RUN_DOC, host)}
    wanted = normalize_flags(flags)
    run = Run(
        run_id(host, started_at, taken),
        host,
        started_at,
        flags=dict(wanted),
        source="controller",
        log_path=log_path,
        requested_flags=dict(wanted),
    )
    store.put_document(RUN_DOC, run.id, host, started_at, run.as_dict())
    return run.id


def _events(store: Store, host: str) -> list[dict[str, Any]]:
    facts = store.events(host, kinds=("server_args", "capacity", "kv_cache"), limit=EVENT_LIMIT)
    happenings = store.events(host, kinds=("event",), limit=EVENT_LIMIT)
    wanted = [e for e in happenings if e.get("event") in ("ready", "crash", "oom", "exception")]
    return sorted(facts + wanted, key=lambda e: (e["t"], e["line"]))


def _first_sample(store: Store, host: str, before: float | None) -> float | None:
    """The first sample logged before the first start seen (only those can need a run of their own)."""
    firsts = [span[0] for m in FIRST_SAMPLE_METRICS if (span := store.extent(host, m)) is not None]
    first = min(firsts) if firsts else None
    return first if first is not None and (before is None or first < before) else None


def _adopt(controller: Run, detected: Run) -> None:
    controller.flags = detected.flags or controller.flags
    controller.capacity = detected.capacity
    controller.ready_at = detected.ready_at
    controller.failed_at = detected.failed_at


def merge_controller_runs(detected: list[Run], controller: list[Run]) -> list[Run]:
    """A controller run takes over the first launch logged after it (before the next controller run)."""
    controller = sorted(controller, key=lambda r: r.started_at)
    used: set[str] = set()
    for i, run in enumerate(controller):
        limit = run.started_at + CONTROLLER_MATCH_S
        if i + 1 < len(controller):
            limit = min(limit, controller[i + 1].started_at)
        candidates = [
            d
            for d in detected
            if d.id not in used
            and (d.flags or d.capacity or d.ready_at)
            and run.started_at - CLOCK_SLACK_S <= d.started_at < limit
        ]
        # A launch that was already up when the controller recorded its run is another's (the demo's
        # story switching a second before a person's restart): a later launch in the window is taken
        # instead. Only while none is logged yet does it stand in (a restart takes minutes to come up,
        # far more than the clocks' slack).
        match = next((d for d in candidates if d.ready_at is None or d.ready_at >= run.started_at),
                     candidates[0] if candidates else None)
        if match is not None:
            used.add(match.id)
            _adopt(run, match)
    runs = sorted([*controller, *(d for d in detected if d.id not in used)], key=lambda r: r.started_at)
    for run, following in zip(runs, [*runs[1:], None], strict=False):  # the None pads; runs may be empty
        run.ended_at = following.started_at if following is not None else None
    return runs


def list_runs(store: Store, host: str) -> list[Run]:
    """Every run of `host` in start order; the documents of kind "run" are brought up to date."""
    documents = {d["key"]: d["data"] for d in store.documents(RUN_DOC, host)}
    controller = [Run.from_dict(d) for d in documents.values() if d.get("source") == "controller"]
    events = _events(store, host)
    first = _first_sample(store, host, events[0]["t"] if events else None)
    runs = merge_controller_runs(detect_runs(host, events, first), controller)
    for run in runs:
        data = run.as_dict()
        if documents.get(run.id) != data:
            store.put_document(RUN_DOC, run.id, host, run.started_at, data)
    return runs


def current_run(store: Store, host: str) -> Run | None:
    """The host's current run: the last one GET /api/runs lists (ended_at null), None before any."""
    runs = list_runs(store, host)
    return runs[-1] if runs else None


def find_runs(store: Store, hosts: list[str], ids: list[str]) -> list[Run]:
    """The runs named by `ids`, in the order given; UnknownRun names the first unknown id."""
    known = {run.id: run for host in hosts for run in list_runs(store, host)}
    missing = [i for i in ids if i not in known]
    if missing:
        raise UnknownRun(f"unknown run {missing[0]!r}")
    return [known[i] for i in ids]
