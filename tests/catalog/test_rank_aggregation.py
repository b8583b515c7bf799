"""The pipeline's host series from literal part samples: every combine rule, and a silent DP rank."""

from __future__ import annotations

import pytest

from kvwatch.app.pipeline.aggregate import RankAggregator
from kvwatch.app.pipeline.rows import record_rows
from kvwatch.app.store.base import Sample


def host_value(out: list[Sample], metric: str) -> float:
    return [s.v for s in out if s.metric == metric and not s.rank][-1]


def feed_ranks(agg: RankAggregator, metric: str, values: dict[str, float], t: float) -> list[Sample]:
    return agg.host_samples([Sample(metric, rank, t, v) for rank, v in values.items()])


def test_counts_and_rates_sum_usage_takes_the_fullest_rank() -> None:
    agg = RankAggregator()
    ranks = {f"DP{i}": 10.0 * (i + 1) for i in range(4)}
    assert host_value(feed_ranks(agg, "running_req", ranks, 1.0), "running_req") == 100.0
    assert host_value(feed_ranks(agg, "gen_throughput", ranks, 1.0), "gen_throughput") == 100.0
    assert host_value(feed_ranks(agg, "queue_req", ranks, 1.0), "queue_req") == 100.0
    usage = {"DP0": 0.4, "DP1": 0.97, "DP2": 0.5, "DP3": 0.1}
    assert host_value(feed_ranks(agg, "token_usage", usage, 1.0), "token_usage") == 0.97


def test_acceptance_is_a_mean_weighted_by_running_requests() -> None:
    agg = RankAggregator()
    for t in (1.0, 2.0):
        feed_ranks(agg, "running_req", {"DP0": 30.0, "DP1": 30.0, "DP2": 30.0, "DP3": 10.0}, t)
        out = feed_ranks(agg, "accept_len", {"DP0": 3.2, "DP1": 3.2, "DP2": 3.2, "DP3": 2.0}, t)
        rate = feed_ranks(agg, "accept_rate", {f"DP{i}": 0.70 for i in range(4)}, t)
    assert host_value(out, "accept_len") == pytest.approx((3 * 30 * 3.2 + 10 * 2.0) / 100)
    assert host_value(rate, "accept_rate") == pytest.approx(0.70)


def test_decode_records_of_four_ranks_give_the_weighted_acceptance() -> None:
    """Through the record path: each rank's running_req comes before its accept_len in one record."""
    agg = RankAggregator()
    out: list[Sample] = []
    for dp in range(4):
        record = {"kind": "decode", "line": dp + 1, "ts": "2026-01-01T00:00:01", "tags": {"DP": dp, "TP": dp},
                  "running_req": 20, "token_usage": 0.5, "accept_len": 3.2, "accept_rate": 0.7,
                  "gen_throughput": 100.0}
        samples, _ = record_rows(record)
        out = agg.host_samples(samples)
    assert host_value(out, "accept_len") == pytest.approx(3.2)
    assert host_value(out, "accept_rate") == pytest.approx(0.7)
    assert host_value(out, "gen_throughput") == pytest.approx(400.0)


def test_gpus_show_mean_and_hottest_and_memory_per_gpu_with_a_total() -> None:
    agg = RankAggregator()
    temps = {f"GPU{i}": 60.0 for i in range(8)} | {"GPU7": 76.0}
    out = feed_ranks(agg, "gpu_temp_c", temps, 1.0)
    assert host_value(out, "gpu_temp_c") == 62.0
    assert host_value(out, "gpu_temp_c_max") == 76.0
    util = feed_ranks(agg, "gpu_util_pct", {f"GPU{i}": 50.0 + i for i in range(8)}, 1.0)
    assert host_value(util, "gpu_util_pct") == 53.5
    assert host_value(util, "gpu_util_pct_max") == 57.0
    memory = feed_ranks(agg, "gpu_mem_used_mib", {f"GPU{i}": 130_000.0 + i for i in range(8)}, 1.0)
    assert host_value(memory, "gpu_mem_used_mib") == 130_007.0
    assert host_value(memory, "gpu_mem_used_mib_total") == 8 * 130_000.0 + 28


def test_a_silent_rank_drops_out_of_the_host_sum() -> None:
    """DP3 logs every 2 s until t=20, then goes idle; the others keep logging every 2 s. After 3 of its
    median intervals (below the 10 s floor: 10 s) it no longer counts."""
    agg = RankAggregator()
    host: dict[float, float] = {}
    for step in range(0, 31):
        t = 2.0 * step
        ranks = {"DP0": 10.0, "DP1": 10.0, "DP2": 10.0} | ({"DP3": 50.0} if t <= 20.0 else {})
        host[t] = host_value(feed_ranks(agg, "running_req", ranks, t), "running_req")
    assert host[20.0] == 80.0
    assert host[30.0] == 80.0  # silent 10 s: at its limit, still counted
    assert host[32.0] == 30.0  # silent 12 s: dropped
    assert host[60.0] == 30.0
    # it comes back when it logs again
    assert host_value(feed_ranks(agg, "running_req", {"DP3": 5.0}, 61.0), "running_req") == 35.0


def test_a_slow_rank_is_not_dropped_between_its_own_lines() -> None:
    """A rank that logs every 20 s stays in the sum for 3 x 20 s, not the 10 s floor."""
    agg = RankAggregator()
    for t in (0.0, 20.0, 40.0):
        feed_ranks(agg, "queue_req", {"DP1": 4.0}, t)
    out: list[Sample] = []
    for t in range(41, 101):
        out = feed_ranks(agg, "queue_req", {"DP0": 1.0}, float(t))
        if t == 100:
            assert host_value(out, "queue_req") == 5.0  # DP1 silent 60 s = 3 x 20 s
    assert host_value(feed_ranks(agg, "queue_req", {"DP0": 1.0}, 101.0), "queue_req") == 1.0


def test_output_files_that_stop_growing_keep_counting() -> None:
    agg = RankAggregator()
    agg.seed("completions", "/a.jsonl", 500.0)
    agg.host_samples([Sample("completions", "/b.jsonl", 0.0, 10.0)])
    out = agg.host_samples([Sample("completions", "/b.jsonl", 3600.0, 20.0)])
    assert host_value(out, "completions") == 520.0
