"""The fitted KV capacity model against the run's measured capacities (reference/the-run-it-serves.md)."""

from __future__ import annotations

import pytest

from kvwatch.simulator import capacity, demo
from kvwatch.simulator.capacity import KIMI_K25, kv_capacity

MEASURED = {"default": 116_000, "hicache-0.88": 159_000, "fp8-0.90": 376_000}


@pytest.mark.parametrize(("preset", "measured"), sorted(MEASURED.items()))
def test_the_three_configs_land_within_ten_percent(preset: str, measured: int) -> None:
    spec = demo.spec_for(preset, port=30000)
    tokens = spec.capacity().max_total_num_tokens
    assert abs(tokens - measured) / measured < 0.10, (preset, tokens)


def test_fp8_halves_the_bytes_a_token() -> None:
    bf16 = kv_capacity(KIMI_K25, 0.90, "auto", 8).max_total_num_tokens
    fp8 = kv_capacity(KIMI_K25, 0.90, "fp8_e4m3", 8).max_total_num_tokens
    assert fp8 == pytest.approx(2 * bf16, abs=2)


def test_mla_pool_does_not_split_across_tp_ranks() -> None:
    assert kv_capacity(KIMI_K25, 0.88, "auto", 8) == kv_capacity(KIMI_K25, 0.88, "auto", 4)


def test_more_mem_fraction_means_more_tokens_until_headroom_runs_out() -> None:
    tokens = [kv_capacity(KIMI_K25, f, "auto", 8) for f in (0.85, 0.88, 0.90, 0.92, 0.93)]
    assert [c.max_total_num_tokens for c in tokens] == sorted(c.max_total_num_tokens for c in tokens)
    assert [c.oom for c in tokens] == [False, False, False, False, True]  # "0.93 would run out of memory"


def test_unknown_models_get_a_dense_profile_that_splits_with_tp() -> None:
    profile = capacity.profile_for("/models/Llama-3-8B-Instruct")
    assert profile is capacity.GENERIC_8B
    one = kv_capacity(profile, 0.88, "auto", 1).max_total_num_tokens
    two = kv_capacity(profile, 0.88, "auto", 2).max_total_num_tokens
    assert one > 0
    assert two > one
