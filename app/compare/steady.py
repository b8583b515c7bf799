"""Where a run's steady state begins: the warm-up burst after a start is cut off automatically.

The cut is MSER (the marginal standard error rule from simulation output analysis): for batch means
X_1..X_k it picks the truncation d that minimises the variance of the mean of what remains,
sum((X_i - mean)^2) / (k - d)^2 over i > d. It needs no threshold, and a burst that is still decaying
keeps pushing d later. d is searched in the first half only (the classic MSER guard: a cut past the
middle means the run has not settled), and the window it leaves must also pass a drift test (first
and second half of the window agree within noise, noise that counts the correlation of neighbouring
batches), so a series still climbing is reported as "settling" rather than averaged. Each steady
metric (throughput, token usage, running and queued requests) gets its own cut; the window starts at
the latest of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from kvwatch.app.compare.grid import FloatArray
from kvwatch.app.metrics_catalog.names import GEN_THROUGHPUT, QUEUE_REQ, RUNNING_REQ, TOKEN_USAGE

Status = Literal["steady", "settling", "too_short", "no_data"]
STEADY_METRICS = (GEN_THROUGHPUT, TOKEN_USAGE, RUNNING_REQ, QUEUE_REQ)
TARGET_BATCHES = 100
MIN_BATCHES = 10
DRIFT_SIGMAS = 4.0
DRIFT_REL_TOL = 0.05  # a 5% difference between the halves of a window is never called drift
# Nor is a difference below what the log can show: one request, one point of usage.
DRIFT_ABS_TOL = {RUNNING_REQ: 1.0, QUEUE_REQ: 1.0, TOKEN_USAGE: 0.01}
# Above this the variance factor (1 + r) / (1 - r) = 19 would let almost any trend pass as a swing.
MAX_LAG1 = 0.9


@dataclass(frozen=True, slots=True)
class SteadyWindow:
    start: float  # epoch seconds
    end: float
    status: Status
    auto: bool  # False when the window was set by hand
    message: str = ""
    cuts: dict[str, float] = field(default_factory=dict)  # per metric: where its warm-up ends

    @property
    def duration(self) -> float:
        return max(self.end - self.start, 0.0)

    @property
    def ok(self) -> bool:
        return self.status == "steady"

    def as_dict(self, run_start: float) -> dict[str, object]:
        return {
            "start": self.start,
            "end": self.end,
            "start_offset_s": self.start - run_start,
            "end_offset_s": self.end - run_start,
            "duration_s": self.duration,
            "status": self.status,
            "auto": self.auto,
            "message": self.message,
            "warmup_end_by_metric": {k: v - run_start for k, v in self.cuts.items()},
        }


def batch_means(values: FloatArray, batches: int) -> FloatArray:
    size = max(len(values) // batches, 1)
    usable = (len(values) // size) * size
    return np.asarray(values[:usable].reshape(-1, size).mean(axis=1), dtype=np.float64)


def mser_cut(means: FloatArray) -> int:
    """Index of the first batch to keep, searched in the first half of the batches."""
    k = len(means)
    tail_sum = np.cumsum(means[::-1])[::-1]
    tail_sq = np.cumsum((means**2)[::-1])[::-1]
    remaining = k - np.arange(k, dtype=np.float64)
    spread = tail_sq - tail_sum**2 / remaining
    score = np.maximum(spread, 0.0) / remaining**2
    half = k // 2 + 1
    return int(np.argmin(score[:half]))


def lag1_correlation(means: FloatArray) -> float:
    """Lag-1 autocorrelation of `means` about their least-squares line, clipped to [0, MAX_LAG1]."""
    x = np.arange(len(means), dtype=np.float64)
    residual = means - np.polyval(np.polyfit(x, means, 1), x)
    energy = float(np.dot(residual, residual))
    if energy <= 1e-9 * float(np.sum((means - means.mean()) ** 2)):  # on the line: rounding is no signal
        return 0.0
    return min(max(float(np.dot(residual[:-1], residual[1:])) / energy, 0.0), MAX_LAG1)


def drifting(means: FloatArray, floor: float = 0.0) -> bool:
    """True when the window's two halves differ by more than noise (and more than DRIFT_REL_TOL).

    Batch means of a saturated server are not independent: retraction cycles and slow swings last
    minutes, so neighbouring batches move together, and noise taken as if they were independent is
    too small (the simulator's steady 0.88 config, ten minutes after a start, was called drifting
    in 15 of 200 seeds). The noise of the halves'
    means is widened by the AR(1) factor (1 + r) / (1 - r), r the lag-1 correlation about the
    window's trend line, so that a trend itself does not count as correlation."""
    first, second = np.array_split(means, 2)
    if len(first) < 2 or len(second) < 2:
        return False
    gap = abs(float(second.mean() - first.mean()))
    r = lag1_correlation(means)
    independent = first.var(ddof=1) / len(first) + second.var(ddof=1) / len(second)
    noise = float(np.sqrt(independent * (1 + r) / (1 - r)))
    scale = max(abs(float(means.mean())), float(np.abs(means).max()) * 0.1, 1e-9)
    return gap > DRIFT_SIGMAS * noise and gap > DRIFT_REL_TOL * scale and gap > floor


def metric_cut(values: FloatArray, start: float, step: float, floor: float = 0.0) -> tuple[float, bool]:
    """(where this metric's warm-up ends, whether what follows still drifts)."""
    known = values[~np.isnan(values)]
    offset = len(values) - len(known)  # grid points before the metric's first sample
    batches = min(TARGET_BATCHES, len(known) // 5)
    if batches < MIN_BATCHES:
        return start + step * len(values), False
    means = batch_means(known, batches)
    size = len(known) // batches
    cut = mser_cut(means)
    return start + step * (offset + cut * size), drifting(means[cut:], floor)


def find_window(
    grids: dict[str, FloatArray], start: float, end: float, step: float, min_steady_s: float
) -> SteadyWindow:
    """The automatic steady window of one run, given its metrics on one grid from `start`."""
    present = {m: g for m, g in grids.items() if m in STEADY_METRICS and np.any(~np.isnan(g))}
    if not present:
        return SteadyWindow(start, end, "no_data", True, "no decode samples in this run yet")
    cuts: dict[str, float] = {}
    drift = []
    for metric, values in present.items():
        cuts[metric], moving = metric_cut(values, start, step, DRIFT_ABS_TOL.get(metric, 0.0))
        if moving:
            drift.append(metric)
    begin = min(max(cuts.values()), end)
    if drift:
        return SteadyWindow(
            begin,
            end,
            "settling",
            True,
            f"not enough steady data yet: {', '.join(drift)} still drifting",
            cuts,
        )
    return check_length(SteadyWindow(begin, end, "steady", True, "", cuts), min_steady_s)


def check_length(window: SteadyWindow, min_steady_s: float) -> SteadyWindow:
    if window.duration >= min_steady_s and window.duration > 0:
        return window
    message = f"not enough steady data yet: {window.duration / 60:.1f} min steady, need {min_steady_s / 60:.1f} min"
    return SteadyWindow(window.start, window.end, "too_short", window.auto, message, window.cuts)


def manual_window(start: float, end: float, min_steady_s: float) -> SteadyWindow:
    """A window set by hand is used as set; a note says when it is shorter than the minimum."""
    window = SteadyWindow(start, end, "steady", False, "set by hand")
    if window.duration < min_steady_s:
        return SteadyWindow(start, end, "steady", False,
                            f"set by hand: {window.duration / 60:.1f} min, shorter than the "
                            f"{min_steady_s / 60:.1f} min minimum for an automatic window")
    return window
