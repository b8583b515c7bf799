"""What-if on a vLLM host: `--gpu-memory-utilization` (a share of each GPU's TOTAL memory for the whole
instance) sizes the KV pool the way SGLang's `--mem-fraction-static` does, from vLLM's own startup lines
(`Available KV cache memory`, `GPU KV cache size`, `Maximum concurrency for X tokens per request`).
A two-run vLLM log in real line shapes (values made up) goes through the parser and the store."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from kvwatch.app.compare.offline import load_log
from kvwatch.app.diagnosis.memory import GIB, Startup, startup_from_capacity
from kvwatch.app.diagnosis.predict import Inputs, Workload, predict
from kvwatch.app.diagnosis.throughput import fit_curve
from kvwatch.app.main import create_app
from kvwatch.app.runs import list_runs
from kvwatch.app.store.sqlite import SqliteStore
from tests.app.slice_helpers import start_services

BASE = "http://127.0.0.1:8765"
# (utilization, KV GiB, KV tokens, steady running, waiting): 0.05 more of an 80 GB GPU's 79.2 GiB = 3.96 GiB more pool
RUNS = ((0.85, 21.40, 280_496, 32, 20), (0.90, 25.36, 332_401, 38, 12))
STATS_S, STATS_N, LENGTH = 10.0, 90, 8192


def stamp(t: float) -> str:
    return time.strftime("%m-%d %H:%M:%S", time.gmtime(t))


def write_vllm_log(path: Path) -> None:
    rng = random.Random(7)
    t = time.time() - 2 * (STATS_N * STATS_S + 300)
    lines = []
    for utilization, kv_gib, tokens, running, waiting in RUNS:
        api, core = f"(APIServer pid=4100) INFO {stamp(t)}", f"(EngineCore_DP0 pid=4200) INFO {stamp(t + 90)}"
        lines += [
            f"{api} [utils.py:233] non-default args: {{'model_tag': '/models/llama-70b', "
            f"'max_model_len': {LENGTH}, 'gpu_memory_utilization': {utilization}, 'tensor_parallel_size': 4}}",
            f"{core} [gpu_worker.py:298] Available KV cache memory: {kv_gib:.2f} GiB",
            f"{core} [kv_cache_utils.py:1087] GPU KV cache size: {tokens:,} tokens",
            f"{core} [kv_cache_utils.py:1091] Maximum concurrency for {LENGTH:,} tokens per request: "
            f"{tokens / LENGTH:.2f}x",
        ]  # (no uvicorn `Application startup complete.`: it has no stamp, and an offline load stamps it "now")
        t += 120
        for _ in range(STATS_N):
            run = running + rng.randint(-2, 2)
            usage = 0.95 + rng.random() * 0.02
            gen = 600 + 9 * run + rng.random() * 20
            lines.append(f"(APIServer pid=4100) INFO {stamp(t)} [loggers.py:271] Engine 000: Avg prompt throughput: "
                         f"310.0 tokens/s, Avg generation throughput: {gen:.1f} tokens/s, Running: {run} reqs, "
                         f"Waiting: {waiting} reqs, GPU KV cache usage: {usage * 100:.1f}%, "
                         "Prefix cache hit rate: 0.0%")
            t += STATS_S
        t += 60
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def vllm_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("vllm")
    services = start_services(tmp)
    write_vllm_log(tmp / "vllm.log")
    assert isinstance(services.store, SqliteStore)
    load_log(services.store, "local", tmp / "vllm.log")
    with TestClient(create_app(services, manage_collectors=False), base_url=BASE) as api:
        yield {"api": api, "runs": list_runs(services.store, "local")}
    services.store.close()


def test_vllm_startup_lines_make_a_startup() -> None:
    capacity = {"max_total_num_tokens": 280496, "max_model_len": 8192, "max_concurrency": 34.24,
                "kv_cache": {"available_kv_cache_memory": 21.4}}
    startup = startup_from_capacity(capacity)
    assert startup is not None and startup.engine == "vllm" and startup.kv_gib == 21.4
    assert startup.max_model_len == 8192
    # V0 logs blocks and the concurrency line, no token count: tokens are the concurrency x the length.
    v0 = startup_from_capacity({"gpu_blocks": 19102, "max_model_len": 16384, "max_concurrency": 18.65,
                                "kv_cache": {"kv_cache_size_gib": 37.31, "total_gpu_memory_gib": 79.15}})
    assert v0 is not None and v0.max_total_num_tokens == int(16384 * 18.65) and v0.kv_gib == 37.31
    sglang = startup_from_capacity({"max_total_num_tokens": 158983, "kv_cache": {"kv_size": 15.57}})
    assert sglang is not None and sglang.engine == "sglang"


def test_utilization_moves_the_pool_by_total_memory_times_the_step() -> None:
    startup = Startup(280_496, 21.40, None, None, engine="vllm", max_model_len=LENGTH)
    inputs = Inputs(flags={"gpu-memory-utilization": 0.85}, startup=startup, total_gib=79.2, total_source="test",
                    workload=Workload(None, None, None, None), curve=fit_curve(np.empty(0), np.empty(0)))
    out = predict(inputs, {"gpu-memory-utilization": 0.90})
    per_token = 21.40 * GIB / 280_496
    assert out.max_total_num_tokens == int((21.40 + 79.2 * 0.05) * GIB / per_token)
    assert "vLLM" in out.basis["engine"] and "requests of full length" in out.basis["max_concurrency"]
    assert [r["kind"] for r in out.risks] == ["not_modeled"]  # vLLM logs nothing to judge the OOM risk by
    # The SGLang flag means nothing to a vLLM run: no change of pool.
    same = predict(inputs, {"mem-fraction-static": 0.95})
    assert same.max_total_num_tokens == 280_496


def test_the_runs_of_a_vllm_log_and_their_capacity(vllm_host: dict[str, Any]) -> None:
    runs = vllm_host["runs"]
    assert [r.flags.get("gpu-memory-utilization") for r in runs] == [0.85, 0.90]
    assert [r.capacity["max_total_num_tokens"] for r in runs] == [280_496, 332_401]
    assert runs[1].capacity["kv_cache"]["available_kv_cache_memory"] == 25.36


def test_predict_on_a_vllm_host_over_http(vllm_host: dict[str, Any]) -> None:
    api = vllm_host["api"]
    (first, *_), (second, *_) = RUNS
    body = api.post("/api/hosts/local/predict", json={"flags": {"gpu-memory-utilization": 0.95}}).json()
    # The two runs measured 3.96 GiB of pool per 0.05 of utilization; one more step adds as much again.
    grown = RUNS[1][2] + (RUNS[1][2] - RUNS[0][2])
    assert body["max_total_num_tokens"] == pytest.approx(grown, rel=0.005)
    assert "pool growth per unit of fraction between runs" in body["basis"]["total_gpu_memory"]
    assert body["running_req"] is not None and body["running_req"] > 38  # more pool, the queue admitted
    back = api.post("/api/hosts/local/predict", json={"flags": {"gpu_memory_utilization": first}}).json()
    assert back["max_total_num_tokens"] == pytest.approx(RUNS[0][2], rel=0.005)
    assert back["risks"] == [] and second == 0.90
    refused = api.post("/api/hosts/local/predict", json={"flags": {"mem-fraction-static": 0.9}})
    assert refused.status_code == 422 and refused.json()["detail"]["errors"][0]["flag"] == "mem-fraction-static"
    too_much = api.post("/api/hosts/local/predict", json={"flags": {"gpu-memory-utilization": 1.2}})
    assert too_much.status_code == 422
