"""Series computed from stored ones: completions per second, and the ETA to a target count."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from kvwatch.app.metrics_catalog.names import COMPLETIONS
from kvwatch.app.runs.registry import RUN_DOC
from kvwatch.app.store.base import Store

RATE_WINDOW_S = 60.0  # trailing window for completion_rate: output files grow in bursts
ETA_WINDOW_S = 600.0  # the recent pace the ETA assumes


def trailing_rate(
    t: npt.NDArray[np.float64], v: npt.NDArray[np.float64], window: float,
    run_starts: npt.NDArray[np.float64] | None = None,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Per-second increase of a cumulative count over the trailing `window`, at each sample; with
    `run_starts` (sorted), a window never reaches back before the start of the run its sample is in.

    A drop (files rotated, counts restarted) would read as a negative rate; it is clipped to zero.
    """
    if len(t) < 2:
        return np.empty(0), np.empty(0)
    lower = t - window
    if run_starts is not None and len(run_starts):
        index = np.searchsorted(run_starts, t, side="right") - 1
        floor = np.where(index >= 0, run_starts[np.maximum(index, 0)], -np.inf)
        lower = np.maximum(lower, floor)
    start = np.searchsorted(t, lower, side="left")
    elapsed = t - t[start]
    usable = elapsed > 0
    rate = np.clip((v[usable] - v[start][usable]) / elapsed[usable], 0.0, None)
    return np.ascontiguousarray(t[usable]), np.ascontiguousarray(rate)


def drop_unobserved(
    rt: npt.NDArray[np.float64], rv: npt.NDArray[np.float64], t: npt.NDArray[np.float64],
    window: float, marks: list[float],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Rates from `trailing_rate(t, ...)` minus those whose window reaches back across a catch-up
    mark (app/pipeline/batches.py): the step at a mark happened while nobody read the file, so a
    rate over it would show an average as if it had been observed."""
    if not marks or not len(rt):
        return rt, rv
    starts = t[np.searchsorted(t, rt - window, side="left")]
    marked = np.asarray(sorted(marks))
    # a mark m lies in (window start, rate time]: count marks <= rt minus marks <= start
    crossed = np.searchsorted(marked, rt, side="right") > np.searchsorted(marked, starts, side="right")
    return np.ascontiguousarray(rt[~crossed]), np.ascontiguousarray(rv[~crossed])


def stored_run_starts(store: Store, host: str) -> npt.NDArray[np.float64]:
    """Every stored run start of the host, sorted (the run documents app/runs keeps)."""
    return np.sort(np.asarray([float(doc["t"]) for doc in store.documents(RUN_DOC, host)], dtype=np.float64))


def stored_run_start(store: Store, host: str) -> float | None:
    """The newest start among the host's stored run documents (kept by app/runs on every listing):
    a cheap read, where detecting the runs again would read every event."""
    starts = [float(doc["t"]) for doc in store.documents(RUN_DOC, host)]
    return max(starts) if starts else None


def eta(
    store: Store, host: str, target: int | None, now: float, since: float | None = None
) -> dict[str, Any] | None:
    """Done so far, recent pace and when `target` completions will be reached at that pace. The pace
    is read after the current run's start (`since`, else the newest stored one): another config's
    pace is not this one's."""
    last = store.latest(host, COMPLETIONS)
    if last is None:
        return None
    run_start = stored_run_start(store, host) if since is None else since
    start = last[0] - ETA_WINDOW_S if run_start is None else max(last[0] - ETA_WINDOW_S, run_start)
    t, v = store.series(host, COMPLETIONS, since=start)
    rate = float((v[-1] - v[0]) / (t[-1] - t[0])) if len(t) >= 2 and t[-1] > t[0] else 0.0
    rate = max(rate, 0.0)
    done = last[1]
    out: dict[str, Any] = {"done": done, "target": target, "rate_per_s": rate, "eta_s": None, "eta_at": None}
    if target is not None and rate > 0 and done < target:
        out["eta_s"] = (target - done) / rate
        out["eta_at"] = now + out["eta_s"]
    elif target is not None and done >= target:
        out["eta_s"] = 0.0
    return out
