"""Entry points: a host's diagnosis and a what-if prediction, read from the store."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from kvwatch.app.config import HostConfig
from kvwatch.app.diagnosis.diagnose import Diagnosis, VetoCheck, diagnose, verdict_of
from kvwatch.app.diagnosis.inputs import prediction_inputs
from kvwatch.app.diagnosis.memory import is_vllm
from kvwatch.app.diagnosis.predict import Inputs, predict
from kvwatch.app.diagnosis.reading import as_of, pick_run, read_snapshot
from kvwatch.app.errors import UnknownRun
from kvwatch.app.metrics_catalog.names import GEN_THROUGHPUT, QUEUE_REQ, RUNNING_REQ
from kvwatch.app.runs import list_runs
from kvwatch.app.store.base import Store


def _no_vetoes(_: dict[str, Any]) -> tuple[str, ...]:
    return ()


def host_engine(store: Store, host: str) -> str:
    """"vllm" when the host's newest run that logged its capacity logged vLLM's lines, else "sglang"."""
    sized = [run for run in list_runs(store, host) if run.capacity]
    return "vllm" if sized and is_vllm(sized[-1].capacity) else "sglang"


def predictor(inputs: Inputs, vetoes: VetoCheck) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def run(changes: dict[str, Any]) -> dict[str, Any]:
        return predict(dataclasses.replace(inputs, vetoes=vetoes(changes)), changes).as_dict()

    return run


def diagnose_host(
    store: Store, host: HostConfig, run_id: str | None = None, now: float | None = None,
    vetoes: VetoCheck = _no_vetoes,
) -> Diagnosis:
    """The host's current run (or `run_id`) diagnosed over its recent window."""
    clock = now if now is not None else time.time()
    runs = list_runs(store, host.name)
    try:
        run = pick_run(runs, run_id, as_of(store, host.name, None, clock))
    except KeyError:
        raise UnknownRun(f"host {host.name!r} has no run {run_id!r}") from None
    snapshot = read_snapshot(store, host, run, as_of(store, host.name, run, clock))
    inputs = prediction_inputs(store, host, run.id, clock)[0] if run is not None else None
    return diagnose(snapshot, predictor(inputs, vetoes) if inputs is not None else None, vetoes)


def host_verdict(store: Store, host: HostConfig, now: float | None = None) -> str:
    """The verdict of `diagnose_host(store, host, now=now)` alone: the fleet's rows show it for every
    host, and the advice's prediction inputs are half of a diagnosis's reads."""
    clock = now if now is not None else time.time()
    run = pick_run(list_runs(store, host.name), None, as_of(store, host.name, None, clock))
    return verdict_of(read_snapshot(store, host, run, as_of(store, host.name, run, clock)))


def predict_host(
    store: Store, host: HostConfig, changes: dict[str, Any], run_id: str | None = None,
    now: float | None = None, vetoes: VetoCheck = _no_vetoes,
) -> dict[str, Any]:
    """`changes` (canonical flag names, validated) on top of the host's running config (or `run_id`'s)."""
    try:
        inputs, run, stand_in = prediction_inputs(store, host, run_id, now)
    except KeyError:
        raise UnknownRun(f"host {host.name!r} has no run {run_id!r}") from None
    if inputs is None:
        reason = stand_in.unknown or "nothing sizes a KV pool"
        return {"max_total_num_tokens": None, RUNNING_REQ: None, GEN_THROUGHPUT: None, QUEUE_REQ: None,
                "risks": [{"kind": "unknown", "message": reason}], "basis": {"changes": changes}, "run": None}
    out = predictor(inputs, vetoes)(changes)
    out["run"] = run.id if run is not None else None
    return out
