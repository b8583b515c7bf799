"""Irregular log samples to a regular time grid, so that plain statistics on the grid are time-weighted.

SGLang logs a decode line every `decode_log_interval` iterations, so lines come faster when batches are
small and slower when they are big: counting lines would over-weight the fast phases. Each sample holds
its value until the next one (a step function), and the grid reads that step function at equal steps.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
MIN_STEP_S = 0.5
MAX_GRID_POINTS = 20_000


def grid_step(t: FloatArray, start: float, end: float) -> float:
    """About one grid point per logged sample, and never more than MAX_GRID_POINTS over the span."""
    inside = t[(t >= start) & (t <= end)]
    typical = float(np.median(np.diff(inside))) if len(inside) > 2 else MIN_STEP_S
    return max(typical, MIN_STEP_S, (end - start) / MAX_GRID_POINTS)


def grid_times(start: float, end: float, step: float) -> FloatArray:
    return np.asarray(start + step * np.arange(max(int((end - start) // step), 0)), dtype=np.float64)


def on_grid(t: FloatArray, v: FloatArray, start: float, end: float, step: float) -> FloatArray:
    """The step function through (t, v) read at start, start+step, ... < end; NaN before the first sample."""
    points = grid_times(start, end, step)
    index = np.searchsorted(t, points, side="right") - 1
    out = np.full(len(points), np.nan)
    known = index >= 0
    out[known] = v[index[known]]
    return out
