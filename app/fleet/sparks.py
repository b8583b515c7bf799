"""A fleet row's sparklines: a host series' recent window as a few bucket means, small enough to send
for every host every second."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

SPARK_WINDOW_S = 900.0  # the last 15 minutes
SPARK_POINTS = 30


def bucket_means(
    t: npt.NDArray[np.float64], v: npt.NDArray[np.float64], end: float,
    window: float = SPARK_WINDOW_S, points: int = SPARK_POINTS,
) -> list[float | None]:
    """`points` means of equal slices of (end - window, end]; None for a slice without samples (a gap
    stays a gap, it is not drawn as a line)."""
    edges = np.linspace(end - window, end, points + 1)
    keep = (t > edges[0]) & (t <= edges[-1])
    slot = np.clip(np.searchsorted(edges, t[keep], side="left") - 1, 0, points - 1)
    sums = np.bincount(slot, weights=v[keep], minlength=points)
    counts = np.bincount(slot, minlength=points)
    return [None if c == 0 else round(float(s / c), 4) for s, c in zip(sums, counts, strict=True)]
