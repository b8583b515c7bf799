"""Predictions kept with the runs they were made for, next to what those runs then measured.

A restart stores the prediction it was made with (a store document of kind "prediction", keyed by
the new run's id). Once the run has logged its KV capacity, and later its steady concurrency and
throughput, the measured values and the relative error `(predicted - measured) / measured` sit
beside it; over a host's runs that is how accurate this tool is on this host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kvwatch.app.diagnosis.verdicts import WARMUP_S
from kvwatch.app.metrics_catalog.names import GEN_THROUGHPUT, RUNNING_REQ
from kvwatch.app.runs import Run, list_runs
from kvwatch.app.store.base import Store

PREDICTION_DOC = "prediction"
METRICS = ("max_total_num_tokens", RUNNING_REQ, GEN_THROUGHPUT)
MIN_STEADY_SAMPLES = 5  # fewer steady samples than this are no measurement yet


def changes_from(from_flags: dict[str, Any], to_flags: dict[str, Any]) -> dict[str, Any]:
    """What a restart from `from_flags` (the flags the controller knows run now) to `to_flags` changes, as
    POST .../predict takes it (and as the page's diff sends it): new values, None for a dropped flag."""
    changes = {name: value for name, value in to_flags.items() if from_flags.get(name) != value}
    changes.update({name: None for name in from_flags if name not in to_flags})
    return changes


def keep_prediction(store: Store, host: str, run_id: str, at: float, based_on: str | None,
                    prediction: dict[str, Any]) -> None:
    """Store `prediction` (POST .../predict's answer) as the one run `run_id` was started with."""
    store.put_document(PREDICTION_DOC, run_id, host, at, {
        "run": run_id, "made_at": at, "based_on": based_on,
        "changes": (prediction.get("basis") or {}).get("changes", {}),
        "predicted": {m: prediction.get(m) for m in METRICS},
        "risks": prediction.get("risks", []),
    })


@dataclass(frozen=True, slots=True)
class Steady:
    running_req: float | None
    gen_throughput: float | None
    samples: int


def relative_error(predicted: object, measured: object) -> float | None:
    """(predicted - measured) / measured, None when either is missing or measured is 0."""
    if not isinstance(predicted, int | float) or not isinstance(measured, int | float) or not measured:
        return None
    return round((float(predicted) - float(measured)) / float(measured), 4)


def _steady(store: Store, run: Run, until: float | None) -> Steady:
    """Median running requests and generation throughput after the run's warm-up."""
    if run.ready_at is None:
        return Steady(None, None, 0)
    since = run.ready_at + WARMUP_S
    _, running = store.series(run.host, RUNNING_REQ, since=since, until=until)
    _, throughput = store.series(run.host, GEN_THROUGHPUT, since=since, until=until)
    samples = min(len(running), len(throughput))
    if samples < MIN_STEADY_SAMPLES:
        return Steady(None, None, samples)
    return Steady(round(float(np.median(running)), 1), round(float(np.median(throughput)), 1), samples)


def measured(store: Store, run: Run, next_start: float | None) -> dict[str, Any]:
    tokens = run.capacity.get("max_total_num_tokens")
    until = run.ended_at if run.ended_at is not None else next_start
    steady = _steady(store, run, until)
    return {"max_total_num_tokens": tokens if isinstance(tokens, int | float) else None,
            RUNNING_REQ: steady.running_req, GEN_THROUGHPUT: steady.gen_throughput,
            "steady_samples": steady.samples, "state": run.state}


def prediction_record(doc: dict[str, Any], run: Run | None, seen: dict[str, Any] | None) -> dict[str, Any]:
    predicted = doc.get("predicted") or {}
    seen = seen or {}
    return {**doc, "measured": seen if run is not None else None,
            "error": {m: relative_error(predicted.get(m), seen.get(m)) for m in METRICS}}


def summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per metric: how many runs have both numbers, and the mean of |relative error| over them."""
    out: dict[str, Any] = {}
    for metric in METRICS:
        errors = [abs(e) for r in records if (e := r["error"].get(metric)) is not None]
        out[metric] = {"runs": len(errors), "mean_abs_error": round(sum(errors) / len(errors), 4) if errors else None}
    return out


def host_predictions(store: Store, host: str) -> dict[str, Any]:
    """Every kept prediction of `host`, oldest first, with what its run measured, and the summary."""
    runs = list_runs(store, host)
    by_id = {run.id: (run, runs[i + 1].started_at if i + 1 < len(runs) else None) for i, run in enumerate(runs)}
    records = []
    for doc in store.documents(PREDICTION_DOC, host):  # by the time each was made
        data = doc["data"]
        run, next_start = by_id.get(str(data.get("run")), (None, None))
        records.append(prediction_record(data, run, measured(store, run, next_start) if run is not None else None))
    return {"host": host, "predictions": records, "accuracy": summary(records)}
