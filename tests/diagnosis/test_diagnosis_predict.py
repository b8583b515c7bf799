"""What-if on literal startup numbers: the KV pool moves by total memory x the fraction step, fp8
halves a token's bytes, concurrency is the least of KV room, client demand and the cap, throughput
follows this host's step-time curve, and a pool that outgrows the logged headroom is an OOM risk."""

from __future__ import annotations

import numpy as np
import pytest

from kvwatch.app.diagnosis.memory import predict_pool, startup_from_capacity
from kvwatch.app.diagnosis.predict import Inputs, PastRun, Workload, predict
from kvwatch.app.diagnosis.reading import gpu_memory
from kvwatch.app.diagnosis.throughput import Curve, fit_curve, pair_samples
from kvwatch.app.runs import Run
from kvwatch.app.store.sqlite import SqliteStore

H200_GIB = 140.4
# The 0.88 run's startup lines as the story's server logged them: 159K tokens; the pool size is what
# 159K tokens of this model take; 5.47 GB left after CUDA-graph capture.
CAPACITY_088 = {
    "max_total_num_tokens": 158_983,
    "max_running_requests": 2048,
    "available_gpu_mem": 5.47,
    "kv_cache": {"cache": "KV Cache", "dtype": "torch.bfloat16", "tokens": 158_983, "kv_size": 15.57},
}
FLAGS_088 = {"mem-fraction-static": 0.88, "kv-cache-dtype": "auto", "enable-hierarchical-cache": True}


def step_curve(levels: tuple[float, ...] = (40, 55, 72, 150)) -> Curve:
    """Samples of a host whose decode step takes 50 ms + 0.38 ms per running request."""
    wobble = np.tile([-1.0, 0.0, 1.0, 0.0, 0.0], 10 * len(levels))
    running = np.repeat(np.asarray(levels, dtype=np.float64), 50) + wobble
    return fit_curve(running, running / (0.050 + 0.00038 * running))


def inputs(**changes: object) -> Inputs:
    startup = startup_from_capacity(CAPACITY_088)
    assert startup is not None
    base = {
        "flags": FLAGS_088, "startup": startup, "total_gib": H200_GIB, "total_source": "nvidia-smi memory.total",
        "workload": Workload(tokens_per_request=153_179 / 72, demand=72 + 79, top_usage=0.96, queue=79),
        "curve": step_curve(),
    }
    return Inputs(**{**base, **changes})  # type: ignore[arg-type]


def test_085_from_the_088_run_gives_the_measured_116k_within_5_percent() -> None:
    result = predict(inputs(), {"mem-fraction-static": 0.85})
    assert result.max_total_num_tokens == pytest.approx(116_000, rel=0.05)
    assert result.max_total_num_tokens == pytest.approx(115_980, rel=0.002)  # what the 0.85 run logged
    assert result.risks == []
    assert "-0.030 x 140.4 GiB" in result.basis["max_total_num_tokens"]


def test_fp8_at_090_gives_the_measured_376k_and_150_in_flight_without_a_queue() -> None:
    result = predict(inputs(), {"mem-fraction-static": 0.90, "kv-cache-dtype": "fp8_e4m3"})
    assert result.max_total_num_tokens == pytest.approx(376_000, rel=0.01)
    assert result.running_req == 151  # the client's demand, no longer the pool
    assert result.queue_req == 0
    assert result.gen_throughput == pytest.approx(151 / (0.050 + 0.00038 * 151), rel=0.01)
    assert "the client asks for 151" in result.basis["running_req"]


def test_093_outgrows_the_547_gb_left_after_graph_capture() -> None:
    result = predict(inputs(), {"mem-fraction-static": 0.93})
    (risk,) = [r for r in result.risks if r["kind"] == "oom"]
    assert "7.02 GiB more" in risk["message"] and "5.47 GiB" in risk["message"]
    assert "out of memory" in risk["message"]


def test_a_fraction_below_any_headroom_the_host_has_run_with_is_a_possible_oom() -> None:
    roomy = dict(CAPACITY_088, available_gpu_mem=14.95)  # what the simulated 0.88 server logs
    startup = startup_from_capacity(roomy)
    history = (PastRun("fp8-run", 0.90, "fp8_e4m3", 12.14, False),)
    risky = predict(inputs(startup=startup, history=history), {"mem-fraction-static": 0.93})
    assert [r["kind"] for r in risky.risks] == ["oom"] and "least: 12.14 GiB" in risky.risks[0]["message"]
    assert predict(inputs(startup=startup, history=history), {"mem-fraction-static": 0.90}).risks == []


def test_an_earlier_out_of_memory_start_at_that_fraction_is_a_risk() -> None:
    history = (PastRun("oom-run", 0.92, "auto", None, True),)
    result = predict(inputs(history=history, startup=startup_from_capacity({**CAPACITY_088, "available_gpu_mem": 40})),
                     {"mem-fraction-static": 0.92})
    assert any("oom-run ran out of memory" in r["message"] for r in result.risks)


def test_concurrency_is_held_by_kv_room_when_the_client_asks_for_more() -> None:
    result = predict(inputs(), {"mem-fraction-static": 0.85})
    assert result.running_req == pytest.approx(115_995 * 0.96 / (153_179 / 72), abs=0.2)
    assert result.queue_req == pytest.approx(151 - result.running_req, abs=0.1)


def test_max_running_requests_and_max_total_tokens_cap_the_prediction() -> None:
    capped = predict(inputs(), {"kv-cache-dtype": "fp8_e4m3", "max-running-requests": 64})
    assert capped.running_req == 64
    total = predict(inputs(), {"kv-cache-dtype": "fp8_e4m3", "max-total-tokens": 200_000})
    assert total.max_total_num_tokens == 200_000


def test_flags_the_model_does_not_know_are_named_as_a_risk() -> None:
    result = predict(inputs(), {"tp-size": 4})
    assert [r["kind"] for r in result.risks] == ["not_modeled"]
    assert result.max_total_num_tokens == 158_983


def test_unknown_total_memory_cannot_size_a_fraction_change_but_a_dtype_change_still_works() -> None:
    unknown = inputs(total_gib=None, total_source="unknown")
    assert predict(unknown, {"mem-fraction-static": 0.85}).max_total_num_tokens is None
    assert predict(unknown, {"kv-cache-dtype": "fp8_e5m2"}).max_total_num_tokens == 2 * 158_983


def test_the_pool_without_a_logged_size_scales_only_with_the_dtype() -> None:
    startup = startup_from_capacity({"max_total_num_tokens": 100_000})
    assert startup is not None
    change = predict_pool(startup, 0.88, 0.88, "fp8_e4m3", "auto", H200_GIB)
    assert change.tokens == 50_000
    assert predict_pool(startup, 0.88, 0.90, "auto", "auto", H200_GIB).tokens is None


def test_k_and_v_sizes_add_up_to_the_pool() -> None:
    startup = startup_from_capacity({"max_total_num_tokens": 132_681, "kv_cache": {"k_size": 9.11, "v_size": 9.11}})
    assert startup is not None and startup.kv_gib == pytest.approx(18.22)


def test_the_step_time_fit_recovers_the_host_constants() -> None:
    curve = step_curve()
    assert curve.step_s == pytest.approx(0.050, rel=0.02)
    assert curve.per_request_s == pytest.approx(0.00038, rel=0.02)
    assert curve.at(72) == pytest.approx(72 / (0.050 + 0.00038 * 72), rel=0.01)


def test_one_concurrency_level_is_not_fitted_and_extrapolates_between_flat_and_proportional() -> None:
    curve = step_curve((72,))
    assert not curve.fitted
    flat = curve.at(72)
    assert flat is not None
    assert curve.at(150) == pytest.approx((flat * flat * 150 / 72) ** 0.5, rel=0.02)
    assert "interpolated" in curve.describe()


def test_each_throughput_sample_pairs_with_the_running_count_of_its_line() -> None:
    t = np.asarray([1.0, 2.0, 3.0])
    running, throughput = pair_samples(t, np.asarray([10.0, 20.0, 30.0]), np.asarray([0.5, 2.0, 3.5]),
                                       np.asarray([1.0, 2.0, 3.0]))
    assert running.tolist() == [20.0, 30.0] and throughput.tolist() == [2.0, 3.0]


def test_two_runs_of_one_dtype_measure_the_pool_growth_per_fraction() -> None:
    def run(name: str, fraction: float, dtype: str, kv_gib: float) -> Run:
        return Run(name, "gpu1", 0.0, flags={"mem-fraction-static": fraction, "kv-cache-dtype": dtype},
                   capacity={"max_total_num_tokens": 1000, "kv_cache": {"kv_size": kv_gib}})

    store = SqliteStore(":memory:")
    runs = [run("a", 0.85, "auto", 11.36), run("b", 0.90, "fp8_e4m3", 18.38), run("c", 0.88, "auto", 15.57)]
    measured = gpu_memory(store, "gpu1", runs)
    assert measured.total_gib == pytest.approx((15.57 - 11.36) / 0.03)
    assert "between runs a and c" in measured.source
    assumed = gpu_memory(store, "gpu1", runs[:2])
    assert assumed.total_gib == 140.4 and assumed.source.startswith("assumed")


def test_a_run_without_its_flags_says_which_fraction_was_assumed() -> None:
    result = predict(inputs(flags={}), {"mem-fraction-static": 0.88})
    assert "assumed 0.85" in result.basis["running_fraction"]


def test_moving_a_hybrid_models_pool_split_is_named_as_not_modeled() -> None:
    result = predict(inputs(), {"swa-full-tokens-ratio": 0.6})
    assert [r["kind"] for r in result.risks] == ["not_modeled"]
    assert "splits the same memory between the full-attention and sliding-window pools" in result.risks[0]["message"]
