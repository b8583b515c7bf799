"""Completions per second from a server log alone: admissions less retractions, DP ranks summed,
a retraction repeated by every TP rank of its DP group counted once."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvwatch.app.compare import compute_run_stats
from kvwatch.app.compare.offline import load_logs
from kvwatch.app.runs import list_runs
from kvwatch.app.store.base import Batch, Sample
from tests.compare.synth import EPOCH0, stamp

DURATION_S = 1800
TP_PER_DP = 4


def dp_log(path: Path) -> float:
    """Two DP groups admitting 1 request every 4 s each; every 60 s DP0 retracts 2 (logged by 4 TP ranks).
    Returns the true net admission rate."""
    lines = [f"[{stamp(EPOCH0)}] The server is fired up and ready to roll!"]
    for second in range(1, DURATION_S):
        t = EPOCH0 + second
        for dp in (0, 1):
            tag = f"DP{dp} TP{dp * TP_PER_DP}"
            if second % 4 == dp:
                lines.append(
                    f"[{stamp(t)} {tag}] Prefill batch, #new-seq: 1, #new-token: 800, #cached-token: 0, "
                    f"token usage: 0.90, #running-req: 70, #queue-req: 40, "
                )
            lines.append(
                f"[{stamp(t)} {tag}] Decode batch, #running-req: 70, #token: 140000, token usage: 0.90, "
                f"cuda graph: True, gen throughput (token/s): 460.00, #queue-req: 40, "
            )
        if second % 60 == 30:
            lines.extend(
                f"[{stamp(t)} DP0 TP{tp}] KV cache pool is full. Retract requests. #retracted_reqs: 2, "
                "#new_token_ratio: 0.3000 -> 0.5000"
                for tp in range(TP_PER_DP)
            )
    path.write_text("\n".join(lines) + "\n")
    return 2 * 0.25 - 2 / 60


def test_admissions_less_retractions_over_dp_ranks(tmp_path: Path) -> None:
    true_rate = dp_log(tmp_path / "dp.log")
    store, hosts = load_logs([tmp_path / "dp.log"])
    (run,) = list_runs(store, hosts[0])
    stats = compute_run_stats(store, run)
    assert stats.window.status == "steady"
    assert stats.rate is not None and stats.rate_source == "admissions (prefill #new-seq less retractions)"
    assert stats.rate.value == pytest.approx(true_rate, rel=0.03)
    # the host's throughput is the sum over the DP ranks, and says so (the metric catalog's label)
    assert stats.levels["gen_throughput"].value == pytest.approx(920.0)
    assert stats.combine["gen_throughput"] == "sum over 2 DP ranks"
    assert stats.combine["token_usage"] == "max of 2 DP ranks"


def test_output_files_are_preferred_when_they_grew_during_the_window(tmp_path: Path) -> None:
    dp_log(tmp_path / "dp.log")
    store, hosts = load_logs([tmp_path / "dp.log"])
    # What the collector stores for output files: the host's total line count when it saw them grow.
    counts = [Sample("completions", "", EPOCH0 + second, float(3 * (second // 10))) for second in range(5, DURATION_S)]
    store.commit(Batch(hosts[0], "outputs", "/prepared/B2/raw_responses.jsonl", samples=counts))
    (run,) = list_runs(store, hosts[0])
    stats = compute_run_stats(store, run)
    assert stats.rate is not None and stats.rate_source == "output files"
    assert stats.rate.value == pytest.approx(0.3, rel=0.02)


def test_output_files_read_after_the_fact_say_nothing_about_the_rate(tmp_path: Path) -> None:
    dp_log(tmp_path / "dp.log")
    store, hosts = load_logs([tmp_path / "dp.log"])
    late = [Sample("completions", "", EPOCH0 + DURATION_S + 86_400 + i, 5000.0 + i) for i in range(3)]
    store.commit(Batch(hosts[0], "outputs", "/prepared/B2/raw_responses.jsonl", samples=late))
    (run,) = list_runs(store, hosts[0])
    stats = compute_run_stats(store, run)
    assert stats.rate_source == "admissions (prefill #new-seq less retractions)"
