"""Runs from a host's stored events, as a pure function: the same events always give the same runs.

A new run begins at:
- a `server_args` dump (SGLang logs it first thing at every launch);
- the log starting over (a line number lower than the previous event's: rotation, truncation, or a
  new file at the same path, i.e. a new tail generation);
- a capacity line, KV-cache line or ready line once the current run is already up (a relaunch whose
  argument dump was not collected).
A crash, OOM or exception after the start marks the run failed; the next launch starts the next run.
Several ranks repeat the capacity line of one start: only a ready line in between makes it a restart.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

from kvwatch.app.runs.model import Run, normalize_flags, run_id

BOUNDARY_KINDS = ("server_args", "capacity", "kv_cache", "event")
FAILURE_EVENTS = frozenset({"crash", "oom", "exception"})
_NOT_FACTS = frozenset({"kind", "t", "line", "source", "host", "tags", "ts"})


def _facts(event: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in event.items() if k not in _NOT_FACTS}


def _starts_run(run: Run | None, event: dict[str, Any], rotated: bool) -> bool:
    kind = event["kind"]
    opener = kind in ("server_args", "capacity", "kv_cache") or event.get("event") == "ready"
    if run is None:
        return opener
    if kind == "server_args":
        return not _fresh(run)
    if rotated:
        return True
    return opener and run.ready_at is not None


def _fresh(run: Run) -> bool:
    """A run opened by a rotation a moment ago that has seen nothing yet takes the dump as its own."""
    return not run.flags and not run.capacity and run.ready_at is None


def _apply(run: Run, event: dict[str, Any]) -> None:
    kind = event["kind"]
    if kind == "server_args":
        args = event.get("args")
        run.flags = normalize_flags(args) if isinstance(args, dict) else {}
    elif kind == "capacity":
        run.capacity.update(_facts(event))
    elif kind == "kv_cache":
        run.capacity["kv_cache"] = _facts(event)
    elif event.get("event") == "ready" and run.ready_at is None:
        run.ready_at = float(event["t"])
    elif event.get("event") in FAILURE_EVENTS and run.failed_at is None:
        run.failed_at = float(event["t"])


def detect_runs(host: str, events: Iterable[dict[str, Any]], first_sample_t: float | None = None) -> list[Run]:
    """Runs of one host from its server-log events in log order; `first_sample_t` opens a run for
    samples logged before any start was seen (collection began in the middle of a run)."""
    runs: list[Run] = []
    current: Run | None = None
    last_line = 0
    for event in events:
        if event.get("source", "server_log") != "server_log" or event.get("kind") not in BOUNDARY_KINDS:
            continue
        rotated = int(event.get("line", 0)) < last_line
        last_line = int(event.get("line", 0))
        if _starts_run(current, event, rotated):
            current = Run(run_id(host, float(event["t"]), {r.id for r in runs}), host, float(event["t"]))
            runs.append(current)
        if current is not None:
            _apply(current, event)
    if first_sample_t is not None and (not runs or first_sample_t < runs[0].started_at):
        runs.insert(0, Run(run_id(host, first_sample_t, {r.id for r in runs}), host, first_sample_t))
    for run, following in itertools.pairwise(runs):
        run.ended_at = following.started_at
    return runs
