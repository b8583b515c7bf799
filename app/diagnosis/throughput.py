"""Throughput as a function of concurrency, measured on one host.

A decode step of a batch of n requests takes about a + b*n seconds (a: the weights read once per
step, b: each request's own attention and KV reads), so the host makes n / (a + b*n) tokens a second:
it grows with n and saturates at 1/b. The two constants are fitted on this host's own
(running requests, gen throughput) samples, binned by concurrency so that long plateaus do not
outweigh the rest: n / throughput = a + b*n is a straight line in n.

With one concurrency level measured there is no line to fit. Outside the measured range the truth
then lies between two extremes: a step time that is all fixed cost (throughput proportional to n)
and one that is all per-request cost (throughput flat); the prediction is their geometric mean.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
MIN_BIN_SAMPLES = 5
MIN_BINS = 2
BINS = 24
# Concurrencies measured must span this share of the largest before a line is fitted through them:
# the noise of one plateau (72 +- 2 running) says nothing about the slope.
MIN_SPREAD = 0.2


@dataclass(frozen=True, slots=True)
class Curve:
    """Median throughput per concurrency bin, and the step-time fit through them."""

    running: FloatArray  # bin centres (median running requests of the bin)
    throughput: FloatArray  # median gen throughput of the bin
    samples: int
    step_s: float | None  # a: fixed seconds per decode step
    per_request_s: float | None  # b: seconds a step takes longer per running request

    @property
    def fitted(self) -> bool:
        return self.step_s is not None and self.per_request_s is not None

    def at(self, running: float) -> float | None:
        """Predicted tokens a second with `running` requests in the batch."""
        if running <= 0:
            return 0.0
        if self.fitted:
            assert self.step_s is not None and self.per_request_s is not None
            return float(running / (self.step_s + self.per_request_s * running))
        if not len(self.running):
            return None
        low, high = float(self.running[0]), float(self.running[-1])
        if low <= running <= high:
            return float(np.interp(running, self.running, self.throughput))
        edge = low if running < low else high
        flat = float(self.throughput[0] if running < low else self.throughput[-1])
        return float(np.sqrt(flat * flat * running / edge))  # between flat and proportional

    def span(self) -> tuple[float, float] | None:
        return (float(self.running[0]), float(self.running[-1])) if len(self.running) else None

    def describe(self) -> str:
        span = self.span()
        if span is None:
            return "no (running, throughput) samples on this host"
        where = f"{self.samples} decode samples of this host, {span[0]:.0f}-{span[1]:.0f} running"
        if self.fitted:
            assert self.step_s is not None and self.per_request_s is not None
            return (f"step time {self.step_s * 1000:.1f} ms + {self.per_request_s * 1000:.3f} ms per running "
                    f"request, fitted on {where}")
        return (f"interpolated between concurrency bins of {where}; outside them, the geometric mean of flat "
                "and proportional to running (too narrow a range to fit a step time)")


def _bins(running: FloatArray, throughput: FloatArray) -> tuple[FloatArray, FloatArray]:
    edges = np.unique(np.quantile(running, np.linspace(0.0, 1.0, BINS + 1)))
    if len(edges) < 2:
        return np.asarray([np.median(running)]), np.asarray([np.median(throughput)])
    index = np.clip(np.searchsorted(edges, running, side="right") - 1, 0, len(edges) - 2)
    centres, medians = [], []
    for i in range(len(edges) - 1):
        chosen = index == i
        if np.count_nonzero(chosen) >= MIN_BIN_SAMPLES:
            centres.append(float(np.median(running[chosen])))
            medians.append(float(np.median(throughput[chosen])))
    return np.asarray(centres), np.asarray(medians)


def fit_curve(running: FloatArray, throughput: FloatArray) -> Curve:
    """The curve through paired samples (both > 0; idle or stalled samples say nothing of capacity)."""
    keep = (running > 0) & (throughput > 0) & np.isfinite(running) & np.isfinite(throughput)
    running, throughput = running[keep], throughput[keep]
    if len(running) < MIN_BIN_SAMPLES:
        return Curve(np.empty(0), np.empty(0), len(running), None, None)
    centres, medians = _bins(running, throughput)
    order = np.argsort(centres)
    centres, medians = centres[order], medians[order]
    step = per_request = None
    if len(centres) >= MIN_BINS and np.ptp(centres) >= MIN_SPREAD * centres[-1]:
        slope, intercept = np.polyfit(centres, centres / medians, 1)
        if slope > 0 and intercept > 0:
            step, per_request = float(intercept), float(slope)
    return Curve(centres, medians, len(running), step, per_request)


def pair_samples(
    t_running: FloatArray, running: FloatArray, t_throughput: FloatArray, throughput: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Each throughput sample with the running count in effect when it was logged (same decode line)."""
    if not len(t_running) or not len(t_throughput):
        return np.empty(0), np.empty(0)
    index = np.searchsorted(t_running, t_throughput, side="right") - 1
    known = index >= 0
    return running[index[known]], throughput[known]
