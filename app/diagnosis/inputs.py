"""What `predict` rests on for one run, and the earlier run that stands in until the run has measured.

A run has its own measurement only once it is past its warm-up (the first WARMUP_S after the ready
line are the admission burst) and has logged busy batches in the window after it. Until then the
what-if would know the pool but not the requests, so it reads the workload from the host's last run
of the same workload, and also that run's startup lines when the new run has not sized its pool yet.

"Same workload" is what the store can tell: an earlier run of the same host (whose configured client
log and output files are the host's, so the requests come from the same client) that served the same
model (`--model-path`; a run that logged none matches any, as nothing says it differs). The store
keeps no dataset name per run, so a client switched to another dataset between two runs of one model
is not told apart: the basis names the run the numbers come from, so the reader can judge.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from kvwatch.app.config import HostConfig
from kvwatch.app.diagnosis.memory import startup_from_capacity
from kvwatch.app.diagnosis.predict import Inputs, Workload
from kvwatch.app.diagnosis.reading import (
    WINDOW_S,
    as_of,
    gpu_memory,
    host_curve,
    latest_sample,
    past_runs,
    pick_run,
    read_snapshot,
    workload,
)
from kvwatch.app.diagnosis.verdicts import WARMUP_S
from kvwatch.app.runs import Run, list_runs
from kvwatch.app.store.base import Store

MODEL = "model-path"


@dataclass(frozen=True, slots=True)
class Measured:
    """A run's workload over its last busy window, when it has one."""

    run: Run
    workload: Workload
    busy_until: float


@dataclass(frozen=True, slots=True)
class StandIn:
    """The earlier run whose numbers a prediction uses, and what it uses them for."""

    workload_from: str | None = None  # the run the workload was measured on, when not the run itself
    startup_from: str | None = None  # the run whose startup lines size the pool, when not the run itself
    notes: dict[str, str] = field(default_factory=dict)  # basis sentences
    unknown: str | None = None  # why nothing stands in, when nothing does


def same_workload(run: Run, other: Run) -> bool:
    model, theirs = run.flags.get(MODEL), other.flags.get(MODEL)
    return model is None or theirs is None or model == theirs


def measured(store: Store, host: HostConfig, run: Run, clock: float) -> Measured | None:
    """The run's workload over its last busy window; None before its warm-up ends (read_snapshot's
    window starts after it) or while it has no busy batch logged (no tokens per request, no demand)."""
    # The workload is what the run last did while busy, even if it has been idle since.
    busy_until = min(as_of(store, host.name, run, clock), latest_sample(store, host.name) or clock)
    found = workload(read_snapshot(store, host, run, busy_until, window_s=2 * WINDOW_S))
    if found.tokens_per_request is None or found.demand is None:
        return None
    return Measured(run, found, busy_until)


def _reference(store: Store, host: HostConfig, runs: list[Run], run: Run, clock: float) -> Measured | None:
    """The newest earlier run of the same workload that measured one."""
    for earlier in reversed([r for r in runs if r.started_at < run.started_at and r.id != run.id]):
        if same_workload(run, earlier) and (found := measured(store, host, earlier, clock)) is not None:
            return found
    return None


def _own_window_note(run: Run, clock: float) -> str:
    if run.ready_at is None:
        return f"run {run.id} is not ready yet"
    since = clock - run.ready_at
    if since <= WARMUP_S:
        return f"run {run.id} was ready {max(since, 0):.0f} s ago (the first {WARMUP_S:.0f} s are warm-up)"
    return f"run {run.id} has logged no busy batch since its warm-up"


def _pending(run: Run, reference: Run) -> dict[str, Any]:
    """The flags `run` sets differently from `reference`, as changes on top of the reference's."""
    changes: dict[str, Any] = {k: v for k, v in run.flags.items() if reference.flags.get(k) != v}
    changes.update({k: None for k in reference.flags if k not in run.flags})
    return changes


def prediction_inputs(
    store: Store, host: HostConfig, run_id: str | None = None, now: float | None = None,
) -> tuple[Inputs | None, Run | None, StandIn]:
    """What `predict` needs about the host's current run (or `run_id`, KeyError if unknown), with the
    earlier run standing in for what the run has not measured yet; None when nothing sizes a pool."""
    runs = list_runs(store, host.name)
    clock = now if now is not None else time.time()
    run = pick_run(runs, run_id, as_of(store, host.name, None, clock))
    if run_id is None and run is not None and run.state == "failed" and startup_from_capacity(run.capacity) is None:
        # The last start failed before sizing its pool: what runs is the last config that did start.
        run = next((r for r in reversed(runs) if startup_from_capacity(r.capacity) is not None), run)
    if run is None:
        return None, None, StandIn(unknown="no server start seen yet")
    own = measured(store, host, run, clock)
    reference = None if own is not None else _reference(store, host, runs, run, clock)
    base = _sized(runs, run, reference)
    if base is None:
        return None, run, StandIn(unknown=(f"run {run.id} has logged no KV capacity yet and no earlier run of "
                                           f"this host with the same workload ({MODEL}) logged one"))
    startup = startup_from_capacity(base.capacity)
    assert startup is not None  # _sized picks only a run whose startup lines size a pool
    stand_in = _stand_in(run, own, reference, base, clock)
    memory = gpu_memory(store, host.name, runs)
    source = own or reference
    work = source.workload if source is not None else Workload(None, None, None, None)
    return Inputs(
        flags=dict(base.flags), startup=startup, total_gib=memory.total_gib, total_source=memory.source,
        workload=work, curve=host_curve(store, host.name, runs),
        history=past_runs(store, [r for r in runs if r.id not in (run.id, base.id)]),
        pending=_pending(run, base) if base is not run else {},
        notes=stand_in.notes, unknown_workload=stand_in.unknown,
    ), run, stand_in


def _sized(runs: list[Run], run: Run, reference: Measured | None) -> Run | None:
    """The run whose startup lines size the pool: the run itself once it logged them; before that the
    workload's reference, else the newest earlier run of the same workload that logged them. A pool
    needs no measured workload: a run restarted seconds after the last one still has that one's pool."""
    if startup_from_capacity(run.capacity) is not None:
        return run
    if reference is not None and startup_from_capacity(reference.run.capacity) is not None:
        return reference.run
    earlier = [r for r in runs if r.started_at < run.started_at and r.id != run.id]
    return next((r for r in reversed(earlier)
                 if same_workload(run, r) and startup_from_capacity(r.capacity) is not None), None)


def _stand_in(run: Run, own: Measured | None, reference: Measured | None, base: Run, clock: float) -> StandIn:
    notes: dict[str, str] = {}
    startup_from = None
    if base is not run:
        startup_from = base.id
        notes["startup"] = (f"run {run.id} has logged no KV capacity yet: the pool is run {base.id}'s, moved by "
                            f"the flags run {run.id} sets differently")
    if own is not None:
        return StandIn(startup_from=startup_from, notes=notes)
    why = _own_window_note(run, clock)
    if reference is None:
        return StandIn(startup_from=startup_from, notes=notes,
                       unknown=(f"{why}, and no earlier run of this host with the same workload ({MODEL}) "
                                "measured one: running and generation need a measured workload"))
    ref = reference.run.id
    model = run.flags.get(MODEL) or "not logged"
    notes = {"workload_run": ref, "workload": (f"from run {ref}'s measurements: {why}; run {ref} is this host's "
                                               f"last run of the same workload ({MODEL} {model})"), **notes}
    return StandIn(workload_from=ref, startup_from=startup_from, notes=notes)
