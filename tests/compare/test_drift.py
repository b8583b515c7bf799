"""The drift test of the steady window (app/compare/steady.py) against correlated noise.

A saturated server's batch means move together for minutes (retraction cycles, slow swings), so a
drift test that takes them as independent calls a steady run "still drifting": on the simulator's
engine the 0.88 config, ten minutes after a start, was called drifting in 15 of 200 seeds, and its
comparison stayed empty. The noise is now widened by the lag-1 correlation about the trend line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kvwatch.app.compare import compute_run_stats
from kvwatch.app.compare.offline import load_logs
from kvwatch.app.compare.steady import drifting, lag1_correlation
from kvwatch.app.runs import list_runs
from tests.compare.simplay import STORY_SPECS, play

RUNNING_FLOOR = 1.0  # DRIFT_ABS_TOL of running_req


def ar1(rng: np.random.Generator, n: int, rho: float, sd: float) -> np.ndarray:
    """A stationary AR(1) series: lag-1 correlation `rho`, standard deviation `sd`."""
    shocks = rng.normal(0.0, sd * np.sqrt(1 - rho**2), n)
    out = np.empty(n)
    out[0] = rng.normal(0.0, sd)
    for i in range(1, n):
        out[i] = rho * out[i - 1] + shocks[i]
    return out


def test_correlated_swings_around_a_level_are_not_drift() -> None:
    rng = np.random.default_rng(7)
    calls = [drifting(72 + ar1(rng, 50, 0.75, 8.0), RUNNING_FLOOR) for _ in range(400)]
    # Independent-batch noise called 14-15% of these drifting.
    assert np.mean(calls) <= 0.02


def test_a_climb_is_still_drift() -> None:
    rng = np.random.default_rng(8)
    calls = [drifting(72 + np.linspace(0, 14, 50) + rng.normal(0, 3.0, 50), RUNNING_FLOOR) for _ in range(400)]
    assert np.mean(calls) >= 0.95


def test_a_trend_is_not_counted_as_correlation() -> None:
    rng = np.random.default_rng(9)
    climb = np.linspace(0.55, 0.83, 40) + rng.normal(0, 0.005, 40)
    assert lag1_correlation(climb) < 0.3
    assert lag1_correlation(np.linspace(0.0, 1.0, 40)) == 0.0
    assert lag1_correlation(72 + ar1(rng, 200, 0.8, 8.0)) > 0.6


@pytest.mark.parametrize("seed", [10, 28, 43, 46])
def test_a_saturated_run_ten_minutes_long_is_steady(tmp_path: Path, seed: int) -> None:
    """Seeds whose 0.88 run the independent-batch test called drifting."""
    path = tmp_path / "server.log"
    with path.open("w", encoding="utf-8") as out:
        played = play(STORY_SPECS[1], out, 1_771_934_400.0, 600.0, seed)
    store, hosts = load_logs([path])
    (run,) = list_runs(store, hosts[0])
    stats = compute_run_stats(store, run, min_steady_s=120.0)
    assert stats.window.ok, stats.window.message
    truth = played.truth(stats.window.start, stats.window.end)
    for metric, floor in (("running_req", 1.0), ("queue_req", 1.0), ("token_usage", 0.005)):
        measured, true = stats.levels[metric].value, truth[metric]
        assert abs(measured - true) <= max(0.02 * true, floor), (metric, measured, true)
