"""Statistics over a steady window, with confidence intervals that respect autocorrelation.

Consecutive samples of a serving run are strongly correlated (a batch of 72 requests changes slowly),
so resampling single points would give intervals far too narrow. The moving-block bootstrap resamples
whole blocks instead; the block is a few correlation times long (the lag where the autocorrelation
first falls below 1/e), and never shorter than n^(1/3).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from kvwatch.app.compare.grid import FloatArray

N_BOOT = 400
CONFIDENCE = 0.95
Statistic = Callable[[FloatArray], FloatArray]  # reduces axis 1 of a (replicates, n) array


@dataclass(frozen=True, slots=True)
class Summary:
    value: float  # the median (levels) or the mean rate (completions per second)
    p5: float
    p95: float
    ci_low: float
    ci_high: float
    n: int
    block: int
    replicates: FloatArray  # bootstrap replicates of `value`, for tests of a difference

    def as_dict(self) -> dict[str, float | int]:
        return {
            "value": self.value,
            "p5": self.p5,
            "p95": self.p95,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "n": self.n,
            "block": self.block,
        }


def correlation_time(values: FloatArray) -> int:
    """First lag where the autocorrelation falls below 1/e (at least 1)."""
    centered = values - values.mean()
    n = len(centered)
    if n < 4 or not np.any(centered):
        return 1
    spectrum = np.fft.rfft(centered, 2 * n)
    acf = np.fft.irfft(spectrum * np.conj(spectrum))[: n // 2]
    below = np.nonzero(acf / acf[0] < np.exp(-1))[0]
    return int(below[0]) if len(below) else n // 2


def block_length(values: FloatArray) -> int:
    n = len(values)
    return int(min(max(2 * correlation_time(values), round(n ** (1 / 3)), 1), max(n // 4, 1)))


def block_bootstrap(
    values: FloatArray, statistic: Statistic, rng: np.random.Generator, n_boot: int = N_BOOT
) -> tuple[FloatArray, int]:
    """Replicates of `statistic` over moving-block resamples of `values`, and the block length used."""
    n = len(values)
    block = block_length(values)
    blocks = -(-n // block)
    starts = rng.integers(0, n - block + 1, size=(n_boot, blocks))
    index = (starts[:, :, None] + np.arange(block)).reshape(n_boot, -1)[:, :n]
    return statistic(values[index]), block


def _median(samples: FloatArray) -> FloatArray:
    return np.asarray(np.median(samples, axis=1), dtype=np.float64)


def _mean(samples: FloatArray) -> FloatArray:
    return np.asarray(samples.mean(axis=1), dtype=np.float64)


def _interval(replicates: FloatArray) -> tuple[float, float]:
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(replicates, [tail, 100 - tail])
    return float(low), float(high)


def summarize_level(values: FloatArray, rng: np.random.Generator) -> Summary:
    """Median and p5/p95 of a time-weighted level (values on a regular grid), CI of the median."""
    values = values[~np.isnan(values)]
    replicates, block = block_bootstrap(values, _median, rng)
    p5, median, p95 = np.percentile(values, [5, 50, 95])
    return Summary(float(median), float(p5), float(p95), *_interval(replicates), len(values), block, replicates)


def _bin_means(values: FloatArray, size: int) -> FloatArray:
    usable = (len(values) // size) * size
    return np.asarray(values[:usable].reshape(-1, size).mean(axis=1), dtype=np.float64) if usable else values


def summarize_rate(counts: FloatArray, step: float, rng: np.random.Generator) -> Summary:
    """A cumulative count on a grid to its rate per second: the mean rate, p5/p95 of per-bin rates,
    and the CI of the mean from a block bootstrap of per-minute rates. Per-step increments would
    overstate the noise: a retraction (a negative step) and the re-admission that cancels it a few
    seconds later fall into different blocks."""
    counts = counts[~np.isnan(counts)]
    per_step = np.diff(counts) / step
    minutes = _bin_means(per_step, max(round(60.0 / step), 1))
    replicates, block = block_bootstrap(minutes, _mean, rng)
    # p5/p95 over twelfths of the window (at least a minute): shorter bins mostly show the randomness
    # of single completions.
    bins = _bin_means(per_step, max(round(max(60.0, len(counts) * step / 12) / step), 1))
    p5, p95 = np.percentile(bins, [5, 95])
    low, high = _interval(replicates)
    return Summary(float(per_step.mean()), float(p5), float(p95), low, high, len(per_step), block, replicates)


def within_noise(a: Summary, b: Summary) -> bool:
    """True when the 95% interval of the difference (independent runs) contains zero."""
    size = min(len(a.replicates), len(b.replicates))
    low, high = _interval(a.replicates[:size] - b.replicates[:size])
    return low <= 0.0 <= high
