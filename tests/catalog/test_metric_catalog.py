"""The catalog's pure rules on literal inputs: combine, silence, part kinds, labels."""

from __future__ import annotations

import math

import pytest

from kvwatch.app.metrics_catalog import CATALOG, combine, describe, info, live_parts, part_kind, silence_limit
from kvwatch.app.metrics_catalog.combine import FIRST_SILENCE_S, SILENCE_FLOOR_S


def test_sum_max_mean_on_literal_values() -> None:
    assert combine("sum", [100.0, 200.0, 300.0, 400.0]) == 1000.0
    assert combine("max", [0.31, 0.97, 0.5]) == 0.97
    assert combine("mean", [60.0] * 8) == 60.0
    assert math.isnan(combine("sum", []))


def test_weighted_mean_weighs_by_running_requests_and_falls_back_to_mean() -> None:
    # two busy ranks accept 3.0 tokens/step, an almost idle one 1.0: the host accepts close to 3
    assert combine("weighted_mean", [3.0, 3.0, 1.0], [50.0, 50.0, 1.0]) == pytest.approx(301.0 / 101.0)
    assert combine("weighted_mean", [3.2, 2.0], [0.0, 0.0]) == pytest.approx(2.6)  # every rank idle
    assert combine("weighted_mean", [3.2, 2.0], None) == pytest.approx(2.6)


def test_four_ranks_never_add_up_rates_or_lengths() -> None:
    """Issue #16: four DP ranks at accept rate 0.70 showed 2.8, accept length 3.2 showed 12.8."""
    for metric, value in (("accept_rate", 0.70), ("accept_len", 3.2)):
        rule = info(metric).over_ranks
        assert rule == "weighted_mean"
        assert combine(rule, [value] * 4, [10.0] * 4) == pytest.approx(value)


def test_gpu_rules_mean_and_hottest_never_a_sum() -> None:
    """Eight GPUs at 60 °C showed 480 °C; memory showed "1M MiB"."""
    temps = [60.0, 61.0, 59.0, 60.0, 60.0, 60.0, 60.0, 72.0]
    temp = info("gpu_temp_c")
    assert temp.over_gpus == "mean" and [e.suffix for e in temp.extras] == ["max"]
    assert combine(temp.over_gpus, temps) == pytest.approx(61.5)
    assert combine(temp.extras[0].rule, temps) == 72.0
    assert info("gpu_util_pct").over_gpus == "mean"
    memory = info("gpu_mem_used_mib")
    assert memory.over_gpus == "max" and [e.suffix for e in memory.extras] == ["total"]
    per_gpu = [130_000.0] * 7 + [131_000.0]
    assert combine(memory.over_gpus, per_gpu) == 131_000.0
    assert combine(memory.extras[0].rule, per_gpu) == 1_041_000.0


def test_design_rules_for_counts_rates_and_usage() -> None:
    for metric in ("gen_throughput", "running_req", "queue_req", "input_throughput", "completions"):
        assert info(metric).over_ranks == "sum", metric
    assert info("token_usage").over_ranks == "max"
    assert not info("completions").drops_silent  # an output file that stopped growing still counts


def test_unknown_metric_is_guessed_and_marked() -> None:
    guess = info("gpu_fan_speed_pct")
    assert not guess.known and guess.over_gpus == "mean"
    assert info("mystery_usage").over_ranks == "max"
    assert info("mystery_req").over_ranks == "sum"
    assert all(entry.known for entry in CATALOG.values())


def test_silence_limit_is_three_median_intervals_with_a_floor() -> None:
    assert silence_limit([5.0, 5.0, 40.0]) == 15.0
    assert silence_limit([0.5, 0.5]) == SILENCE_FLOOR_S
    assert silence_limit([]) == FIRST_SILENCE_S


def test_live_parts_drop_a_silent_rank() -> None:
    seen = {"DP0": 100.0, "DP1": 100.0, "DP2": 60.0}
    limits = {"DP0": 15.0, "DP1": 15.0, "DP2": 15.0}
    assert live_parts(seen, limits, 100.0) == ["DP0", "DP1"]
    assert live_parts(seen, limits, 75.0) == ["DP0", "DP1", "DP2"]


def test_part_kinds() -> None:
    assert [part_kind(r) for r in ("DP3", "GPU0", "", "/p/B2/raw_responses.jsonl", "DPX")] == [
        "dp", "gpu", "host", "file", "file"]


def test_labels_say_what_the_host_series_shows() -> None:
    ranks = ["", "DP0", "DP1", "DP2", "DP3"]
    assert describe("gen_throughput", ranks)["label"] == "sum over 4 DP ranks"
    assert describe("token_usage", ranks)["label"] == "max of 4 DP ranks"
    assert describe("accept_len", ranks)["label"] == "mean of 4 DP ranks, weighted by running requests"
    gpus = ["", *(f"GPU{i}" for i in range(8))]
    assert describe("gpu_temp_c", gpus)["label"] == "mean of 8 GPUs"
    assert describe("gpu_temp_c_max", gpus)["label"] == "max of 8 GPUs"
    assert describe("gpu_mem_used_mib", gpus)["label"] == "max of 8 GPUs"
    assert describe("gpu_mem_used_mib_total", gpus)["label"] == "total of 8 GPUs"
    assert describe("completions", ["a.jsonl"])["label"] == "sum over 1 output file"
    assert describe("running_req", [""])["label"] == "as logged (one series)"
    assert describe("running_req", ranks, rank="DP3") == {
        "rule": "one", "over": "dp", "parts": 1, "label": "DP3 only", "unit": "requests"}
