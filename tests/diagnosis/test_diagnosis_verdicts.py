"""Every verdict on a literal window: the numbers of the story where it has them (72 running at 0.96
usage with 79 queued is KV-bound; 150 in flight at 0.62 with no queue is client-bound)."""

from __future__ import annotations

import numpy as np

from kvwatch.app.diagnosis import VERDICTS, Diagnosis, diagnose
from kvwatch.app.diagnosis.snapshot import points
from tests.diagnosis.literal import START, STEP, T0, busy, counter, level, window


def facts(result: Diagnosis) -> dict[str, object]:
    return {item["metric"]: item["value"] for item in result.evidence}


def test_the_saturated_088_run_is_kv_bound_with_its_numbers() -> None:
    series = busy(usage=0.96, running=72, queue=79, throughput=930.63, tokens=153_179)
    result = diagnose(window(series))
    assert result.verdict == "kv_bound"
    assert facts(result)["token_usage"] == 0.96 and facts(result)["queue_req"] == 79
    # each request holds ~2.1K tokens, so 159K tokens fit ~74: running is held by capacity
    running = next(e for e in result.evidence if e["metric"] == "running_req")
    assert "2,127 tokens" in running["fact"] and "fit ~75" in running["fact"]


def test_retractions_without_a_queue_still_mean_the_pool_is_the_limit() -> None:
    series = busy(usage=0.97, running=70, queue=0, throughput=900)
    series["new_seq"] = level(1.0)
    result = diagnose(window(series, retractions=((START + 60, 3.0), (START + 200, 2.0))))
    assert result.verdict == "kv_bound"
    assert facts(result)["retracted_reqs"] == 5.0


def test_the_fp8_run_with_150_in_flight_and_no_queue_is_client_bound() -> None:
    series = busy(usage=0.62, running=150, queue=0, throughput=1385, tokens=233_000)
    result = diagnose(window(series, max_total_num_tokens=375_304))
    assert result.verdict == "client_bound"
    assert facts(result)["queue_req"] == 0 and facts(result)["running_req"] == 150
    # the advice names the concurrency the pool could hold: 375,304 x 0.90 / 1,553 = ~217
    assert "~217" in result.suggestions[0]["action"]


def test_running_pinned_at_max_running_requests_is_concurrency_capped() -> None:
    series = busy(usage=0.55, running=[128, 128, 127], queue=40, throughput=1200, tokens=100_000)
    result = diagnose(window(series, max_running_requests=128, max_total_num_tokens=375_304))
    assert result.verdict == "concurrency_capped"
    assert facts(result)["running_req"] == 128
    (advice,) = result.suggestions
    assert advice["flags"] == {"max-running-requests": int(375_304 * 0.9 / (100_000 / 128))}


def test_a_queue_with_kv_room_and_full_prefill_batches_is_prefill_bound() -> None:
    series = busy(usage=0.45, running=40, queue=25, throughput=700)
    series["new_token"] = level([4096.0, 4096.0, 3900.0])
    result = diagnose(window(series, flags={"chunked-prefill-size": 4096}, chunked_prefill_size=4096))
    assert result.verdict == "prefill_bound"
    assert facts(result)["queue_req"] == 25 and facts(result)["token_usage"] == 0.45
    assert facts(result)["new_token"] == 4096.0
    assert result.suggestions[0]["flags"] == {"chunked-prefill-size": 8192}


def test_a_queue_at_080_usage_with_small_prefill_batches_waits_on_the_kv_reservation() -> None:
    series = busy(usage=0.82, running=60, queue=30, throughput=800, tokens=130_000)
    series["new_token"] = level(900.0)
    result = diagnose(window(series, chunked_prefill_size=8192))
    assert result.verdict == "kv_bound"
    assert "reserved for the running requests' future tokens" in result.evidence[0]["fact"]
    assert diagnose(window(busy(usage=0.82, running=60, queue=30, throughput=800))).verdict == "unknown"


def test_most_admissions_ending_retracted_is_thrashing() -> None:
    series = busy(usage=0.99, running=60, queue=90, throughput=400)
    series["new_seq"] = level([1.0, 0.0])  # 30 admissions in the window
    retracts = tuple((START + 10.0 * i, 2.0) for i in range(14))  # 28 retracted
    result = diagnose(window(series, retractions=retracts))
    assert result.verdict == "retracting"
    assert facts(result)["retracted_reqs"] == 28 and facts(result)["admitted"] == 30
    assert "kv_bound" in [f.verdict for f in result.findings]


def test_the_same_concurrency_running_slower_than_earlier_in_the_run_is_degraded() -> None:
    series = busy(usage=0.96, running=72, queue=79, throughput=610)
    earlier = points(np.full(200, 72.0) + np.tile([-2.0, 0.0, 2.0, 1.0], 50), np.full(200, 930.0))
    result = diagnose(window(series, earlier=earlier))
    assert result.verdict == "degraded"
    assert facts(result)["gen_throughput"] == 610 and facts(result)["earlier_gen_throughput"] == 930
    assert "-34%" in result.evidence[1]["fact"]


def test_throughput_like_earlier_is_not_degraded() -> None:
    series = busy(usage=0.96, running=72, queue=79, throughput=900)
    earlier = points(np.full(200, 72.0), np.full(200, 930.0))
    assert diagnose(window(series, earlier=earlier)).verdict == "kv_bound"


def test_hierarchical_cache_on_without_a_single_hit_is_hicache_idle() -> None:
    series = busy(usage=0.62, running=150, queue=0, throughput=1385)
    series["new_token"] = level(2000.0)
    series["cached_token"] = level(0.0)
    result = diagnose(window(series, hicache=True))
    assert result.verdict == "hicache_idle"
    assert facts(result)["new_token"] == 2000.0 * 60
    series["cached_token"] = level([0.0, 512.0])
    assert diagnose(window(series, hicache=True)).verdict == "client_bound"


def test_outputs_not_growing_while_the_server_is_busy_is_client_stalled() -> None:
    series = busy(usage=0.7, running=100, queue=0, throughput=1200)
    series["completions"] = counter(1604, 0.0)
    series["new_seq"] = level([1.0, 0.0, 0.0])  # 20 admissions: requests finished on the server
    result = diagnose(window(series, outputs=True))
    assert result.verdict == "client_stalled"
    assert facts(result)["completions"] == 0 and facts(result)["expected_completions"] == 20


def test_outputs_growing_while_the_client_log_is_silent_is_client_buffered() -> None:
    series = busy(usage=0.62, running=150, queue=0, throughput=1385)
    series["completions"] = counter(1604, 0.5)
    result = diagnose(window(series, outputs=True, client_log=True, client_seen_at=T0 + 30))
    assert result.verdict == "client_buffered"
    assert facts(result)["completions"] == 29.5
    assert "last progress line" in result.evidence[1]["fact"]
    series["client_done"] = counter(1604, 0.5)
    assert diagnose(window(series, outputs=True, client_log=True)).verdict == "client_bound"


def test_a_run_that_is_not_ready_or_just_ready_is_starting() -> None:
    series = busy(usage=0.2, running=150, queue=0, throughput=2000)
    assert diagnose(window(series, ready_at=None, run_state="starting")).verdict == "starting"
    just = diagnose(window(series, ready_at=START + STEP * 50))
    assert just.verdict == "starting" and just.evidence[0]["value"] == STEP * 9


def test_no_batch_logged_lately_or_nothing_running_is_idle() -> None:
    silent = window({}, as_of=START + 290)
    assert diagnose(silent).verdict == "idle"
    stale = busy(usage=0.3, running=10, queue=0, throughput=300)
    stale = {m: (t[:5], v[:5]) for m, (t, v) in stale.items()}  # last batch 270 s before the window's end
    result = diagnose(window(stale))
    assert result.verdict == "idle" and "no batch logged for 275 s" in result.evidence[0]["fact"]
    assert diagnose(window(busy(usage=0.0, running=0, queue=0, throughput=0))).verdict == "idle"


def test_no_run_or_a_failed_run_is_unknown() -> None:
    assert diagnose(window({}, run_state="none", run_id=None, ready_at=None)).verdict == "unknown"
    failed = diagnose(window({}, run_state="failed", failure="oom"))
    assert failed.verdict == "unknown" and failed.evidence[0]["value"] == "oom"


def test_every_verdict_is_one_of_the_contract() -> None:
    assert set(VERDICTS) == {"kv_bound", "client_bound", "concurrency_capped", "prefill_bound", "retracting",
                             "degraded", "hicache_idle", "client_stalled", "client_buffered", "starting", "idle",
                             "unknown"}


def test_kv_bound_advice_carries_predicted_effects() -> None:
    calls: list[dict[str, object]] = []

    def predictor(flags: dict[str, object]) -> dict[str, object]:
        calls.append(flags)
        return {"max_total_num_tokens": 1, "risks": []}

    series = busy(usage=0.96, running=72, queue=79, throughput=930.63, tokens=153_179)
    result = diagnose(window(series, flags={"mem-fraction-static": 0.88, "kv-cache-dtype": "auto"}), predictor)
    assert calls[:2] == [{"mem-fraction-static": 0.9}, {"kv-cache-dtype": "fp8_e4m3"}]
    assert all("predicted" in s for s in result.suggestions if s["flags"])


def test_a_sliding_window_model_whose_swa_pool_fills_is_told_to_move_the_split() -> None:
    """gpt-oss / MiMo: the swa pool at 0.97 while the full-attention pool sits at 0.30. token_usage is
    the fullest pool (parsers/sglang.py), so the run is KV-bound, and the first advice is the split."""
    series = busy(usage=0.97, running=61, queue=40, throughput=1302.11, tokens=981_504)
    series["full_token_usage"], series["swa_token_usage"] = level(0.30), level(0.97)
    calls: list[dict[str, object]] = []

    def predictor(flags: dict[str, object]) -> dict[str, object]:
        calls.append(flags)
        return {"risks": []}

    result = diagnose(window(series, flags={"mem-fraction-static": 0.85, "swa-full-tokens-ratio": 0.5}), predictor)
    assert result.verdict == "kv_bound"
    first = result.suggestions[0]
    assert first["flags"] == {"swa-full-tokens-ratio": 0.6}, result.suggestions
    assert "swa token usage median 0.97, full 0.30" in first["action"] and "predicted" in first
    assert calls[0] == {"swa-full-tokens-ratio": 0.6}
    # no ratio set: said in words; pools alike: no split advice
    unset = diagnose(window(series, flags={"mem-fraction-static": 0.85}))
    assert "raise --swa-full-tokens-ratio from the model's default" in unset.suggestions[0]["action"]
    assert unset.suggestions[0]["flags"] is None
    series["full_token_usage"] = level(0.90)
    alike = diagnose(window(series, flags={"swa-full-tokens-ratio": 0.5}))
    assert not any("swa-full-tokens-ratio" in s["action"] for s in alike.suggestions)
