"""Block bootstrap on autocorrelated samples: honest intervals, and a noise test that knows noise."""

from __future__ import annotations

import numpy as np

from kvwatch.app.compare.stats import block_length, summarize_level, summarize_rate, within_noise


def ar1(rng: np.random.Generator, n: int, phi: float, mean: float, sd: float) -> np.ndarray:
    shocks = rng.normal(0.0, sd * np.sqrt(1 - phi**2), n)
    out = np.empty(n)
    level = rng.normal(0.0, sd)
    for i in range(n):
        level = phi * level + shocks[i]
        out[i] = mean + level
    return out


def test_interval_of_the_median_covers_the_truth_at_about_the_stated_rate() -> None:
    rng = np.random.default_rng(1)
    hits = 0
    widths_block, widths_iid = [], []
    for _ in range(60):
        values = ar1(rng, 1500, 0.95, 930.0, 50.0)
        summary = summarize_level(values, rng)
        hits += summary.ci_low <= 930.0 <= summary.ci_high
        widths_block.append(summary.ci_high - summary.ci_low)
        iid = np.median(values[rng.integers(0, len(values), (400, len(values)))], axis=1)
        widths_iid.append(np.subtract(*np.percentile(iid, [97.5, 2.5])))
    assert hits >= 50  # 95% nominal; block bootstrap runs a little under, never like iid's ~40%
    assert np.median(widths_block) > 2.5 * np.median(widths_iid)


def test_block_follows_the_correlation_time() -> None:
    rng = np.random.default_rng(2)
    assert block_length(rng.normal(size=1000)) <= 12
    assert block_length(ar1(rng, 1000, 0.98, 0.0, 1.0)) >= 40


def test_within_noise_tells_a_real_difference_from_a_repeat() -> None:
    rng = np.random.default_rng(3)
    base = summarize_level(ar1(rng, 2000, 0.9, 930.0, 50.0), rng)
    repeat = summarize_level(ar1(rng, 2000, 0.9, 930.0, 50.0), rng)
    faster = summarize_level(ar1(rng, 2000, 0.9, 1000.0, 50.0), rng)
    assert within_noise(repeat, base)
    assert not within_noise(faster, base)


def test_rate_from_a_cumulative_count() -> None:
    rng = np.random.default_rng(4)
    step = 1.0
    counts = np.cumsum(rng.poisson(0.25, 3600)).astype(float)
    rate = summarize_rate(counts, step, rng)
    assert rate.ci_low <= 0.25 <= rate.ci_high
    assert abs(rate.value - 0.25) < 0.02
    assert rate.p5 < rate.value < rate.p95
