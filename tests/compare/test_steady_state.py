"""Steady state on logs with known true rates: medians within 2% of the truth, warm-up excluded,
short or still-settling runs reported as such, windows adjustable by hand."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from kvwatch.app.compare import compute_run_stats
from kvwatch.app.compare.offline import load_logs
from kvwatch.app.compare.runstats import RunStats
from kvwatch.app.runs import list_runs
from tests.compare.synth import THREE_CONFIGS, RunSpec, write_log

LEVELS = ("gen_throughput", "running_req", "token_usage", "queue_req")


def stats_of(
    tmp_path: Path, spec: RunSpec, seed: int, name: str = "server", **kwargs: object
) -> tuple[RunStats, tuple[float, float]]:
    path = tmp_path / f"{name}.log"
    ((start, ready),) = write_log(path, (spec,), seed=seed)
    store, hosts = load_logs([path])
    (run,) = list_runs(store, hosts[0])
    return compute_run_stats(store, run, **kwargs), (start, ready)  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", [11, 12])
@pytest.mark.parametrize("spec", THREE_CONFIGS, ids=["0.85", "0.88-hicache", "0.90-fp8"])
def test_steady_medians_are_within_2_percent_of_the_truth(tmp_path: Path, spec: RunSpec, seed: int) -> None:
    stats, (_, ready) = stats_of(tmp_path, spec, seed)
    assert stats.window.status == "steady" and stats.window.auto
    for metric in LEVELS:
        true = getattr(spec.truth, metric)
        measured = stats.levels[metric].value
        # token usage is logged with 2 decimals: the log itself cannot be closer than 0.005
        tolerance = max(0.02 * true, 0.0051 if metric == "token_usage" else 0.0, 0.5 if metric == "queue_req" else 0)
        assert abs(measured - true) <= tolerance, (metric, measured, true)
        assert stats.levels[metric].ci_low <= measured <= stats.levels[metric].ci_high
    # The burst is out: where the window starts, what is left of it has sunk below the noise.
    residual = (spec.burst["gen_throughput"] - 1) * np.exp(-(stats.window.start - ready) / spec.warmup_s)
    assert residual < spec.noise
    # and the window is most of the run, not a timid tail.
    assert stats.window.duration > 0.5 * spec.duration_s


def test_completion_rate_interval_covers_the_true_rate(tmp_path: Path) -> None:
    spec = THREE_CONFIGS[1]
    stats, _ = stats_of(tmp_path, spec, seed=5)
    assert stats.rate is not None and stats.rate_source == "admissions (prefill #new-seq less retractions)"
    assert stats.rate.ci_low <= spec.truth.completion_rate <= stats.rate.ci_high
    assert abs(stats.rate.value / spec.truth.completion_rate - 1) < 0.1


def test_a_run_too_short_to_judge_says_so(tmp_path: Path) -> None:
    short = replace(THREE_CONFIGS[1], duration_s=240.0)
    stats, _ = stats_of(tmp_path, short, seed=3)
    assert stats.window.status in ("too_short", "settling")
    assert stats.window.message.startswith("not enough steady data yet")
    assert stats.levels == {} and stats.rate is None


def test_a_run_still_settling_is_not_averaged(tmp_path: Path) -> None:
    # A warm-up whose decay outlasts the run: usage and throughput still moving at the end.
    slow = replace(THREE_CONFIGS[1], duration_s=1800.0, warmup_s=1500.0)
    stats, _ = stats_of(tmp_path, slow, seed=4)
    assert stats.window.status == "settling"
    assert "still drifting" in stats.window.message
    assert stats.levels == {}


def test_window_set_by_hand_overrides_the_detection(tmp_path: Path) -> None:
    spec = THREE_CONFIGS[0]
    stats, (start, _) = stats_of(tmp_path, spec, seed=8, manual=(1800.0, 2400.0))
    assert not stats.window.auto and stats.window.status == "steady"
    assert (stats.window.start, stats.window.end) == (start + 1800.0, start + 2400.0)
    assert abs(stats.levels["gen_throughput"].value / spec.truth.gen_throughput - 1) < 0.05
    # A hand-set window over the warm-up shows the burst: throughput far above the truth.
    burst, _ = stats_of(tmp_path, spec, seed=8, name="again", manual=(0.0, 300.0), min_steady_s=0.0)
    assert burst.levels["gen_throughput"].value > 1.3 * spec.truth.gen_throughput


def test_without_the_cut_the_warm_up_would_bias_the_numbers(tmp_path: Path) -> None:
    spec = replace(THREE_CONFIGS[1], duration_s=1800.0)
    whole, _ = stats_of(tmp_path, spec, seed=9, manual=(0.0, None))
    cut, _ = stats_of(tmp_path, spec, seed=9, name="cut")
    true = spec.truth.queue_req
    assert abs(whole.levels["queue_req"].value - true) > 0.02 * true
    assert abs(cut.levels["queue_req"].value - true) <= 0.02 * true
