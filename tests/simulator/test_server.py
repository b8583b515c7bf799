"""`python -m kvwatch.simulator.server` from the outside: endpoints, /metrics, logs, SIGTERM, crashes."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.fixtures.components import require_component
from tests.simulator.helpers import KIMI_088, SimProcess, get, parse_log, post


@pytest.fixture
def server(tmp_path: Path) -> Iterator[SimProcess]:
    sim = SimProcess(tmp_path, [*KIMI_088, "--enable-metrics"])
    try:
        sim.wait_ready()
        yield sim
    finally:
        sim.stop()


def test_server_info_reports_capacity_and_args(server: SimProcess) -> None:
    status, body = get(server.url + "/server_info")
    info = json.loads(body)
    assert status == 200
    assert info["max_total_num_tokens"] == 158983
    assert (info["tp_size"], info["mem_fraction_static"], info["hicache_size"]) == (8, 0.88, 48)
    assert info["internal_states"][0]["memory_usage"]["token_capacity"] == 158983
    assert get(server.url + "/get_model_info")[0] == 200
    assert json.loads(get(server.url + "/v1/models")[1])["data"][0]["id"] == "/models/Kimi-K2.5"
    assert get(server.url + "/nope") == (404, b'{"detail": "Not Found"}')


def test_generate_and_chat_answer_with_the_requested_length(server: SimProcess) -> None:
    gen = post(server.url + "/generate", {"text": "x" * 400, "sampling_params": {"max_new_tokens": 512}}, 64)
    assert (gen["meta_info"]["prompt_tokens"], gen["meta_info"]["completion_tokens"]) == (100, 64)
    chat = post(server.url + "/v1/chat/completions",
                {"messages": [{"role": "user", "content": "y" * 80}], "max_tokens": 10}, 64)
    assert chat["usage"] == {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}
    assert chat["choices"][0]["finish_reason"] == "length"


def test_metrics_parse_with_sglang_names(server: SimProcess) -> None:
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: post(server.url + "/generate", {"text": "x" * 2000}, 100), range(8)))
    status, body = get(server.url + "/metrics")
    assert status == 200
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    for name in ("sglang:token_usage", "sglang:num_running_reqs", "sglang:num_queue_reqs",
                 "sglang:gen_throughput", "sglang:num_used_tokens", "sglang:max_total_num_tokens"):
        assert families[name].type == "gauge", name
    assert families["sglang:generation_tokens"].type == "counter"
    generated = families["sglang:generation_tokens"].samples[0]
    assert generated.name == "sglang:generation_tokens_total"
    assert generated.value >= 800
    assert generated.labels["model_name"] == "/models/Kimi-K2.5"
    assert families["sglang:max_total_num_tokens"].samples[0].value == 158983
    # promtool parses the scrape; its only complaint is the lint SGLang's own names get (exit 3 = lint).
    promtool = require_component("promtool", "/usr/bin/promtool")
    checked = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, timeout=30)
    complaints = checked.stderr.decode().splitlines()
    assert checked.returncode in (0, 3), complaints
    assert complaints
    assert all(line.endswith("metric names should not contain ':'") for line in complaints), complaints


def test_sigterm_drains_then_kills_its_tree(tmp_path: Path) -> None:
    sim = SimProcess(tmp_path, KIMI_088)
    sim.wait_ready()
    post(sim.url + "/generate", {"text": "x" * 400}, 20)
    sim.proc.send_signal(signal.SIGTERM)
    assert sim.proc.wait(timeout=30) == -signal.SIGKILL  # kill_process_tree(include_parent=True)
    text = sim.log.read_text()
    assert "SIGTERM received. signum=15 frame=None. Draining requests and shutting down..." in text
    assert "Gracefully exiting... Remaining number of requests 0. Remaining requests remaining_rids=[]." in text
    assert f"kill_process_tree called: parent_pid={sim.proc.pid}, include_parent=True" in text
    assert '"POST /generate HTTP/1.1" 200 OK' in text


def test_fail_after_logs_a_traceback_and_dies(tmp_path: Path) -> None:
    sim = SimProcess(tmp_path, [*KIMI_088, "--sim-fail-after", "20"])
    assert sim.proc.wait(timeout=60) == -signal.SIGKILL
    events = [r for r in sim.records() if r["kind"] == "event"]
    assert [e["event"] for e in events][:2] == ["ready", "exception"]
    assert "CUDA error: an illegal memory access" in events[1]["traceback"]


def test_mem_fraction_093_runs_out_of_memory_at_start(tmp_path: Path) -> None:
    sim = SimProcess(tmp_path, ["--model-path", "/models/Kimi-K2.5", "--tp", "8", "--mem-fraction-static", "0.93"])
    assert sim.proc.wait(timeout=60) == -signal.SIGKILL
    events = [r for r in sim.records() if r["kind"] == "event"]
    # kvwatch's parser files a scheduler traceback under `exception`, whatever it ends with
    assert [e["event"] for e in events] == ["exception", "crash"]
    assert "torch.OutOfMemoryError: CUDA out of memory." in events[0]["traceback"]


@pytest.mark.parametrize(("version", "exit_code"), [("0.3.0", 0), ("0.4.10", -signal.SIGKILL),
                                                    ("0.5.8", -signal.SIGKILL), ("0.5.23", -signal.SIGKILL)])
def test_each_version_logs_records_the_parser_reads(tmp_path: Path, version: str, exit_code: int) -> None:
    args = ["--model-path", "/models/Kimi-K2.5", "--tp", "8", "--mem-fraction-static", "0.85",
            "--sim-version", version]
    sim = SimProcess(tmp_path, args)
    sim.wait_ready()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda _: post(sim.url + "/generate", {"text": "x" * 800}, 300), range(4)))
    assert sim.stop() == exit_code
    records = parse_log(sim.log)
    kinds = {r["kind"] for r in records}
    assert {"capacity", "decode", "prefill", "event"} <= kinds
    capacity = next(r for r in records if r["kind"] == "capacity")
    assert capacity["max_total_num_tokens"] == 115980
    decode = next(r for r in records if r["kind"] == "decode")
    assert decode["tags"] == {"TP": 0}
    assert {"running_req", "token", "token_usage", "gen_throughput", "queue_req"} <= set(decode)
    assert any(r["kind"] == "event" and r["event"] == "ready" for r in records)


def test_dp_ranks_log_their_own_lines(tmp_path: Path) -> None:
    sim = SimProcess(tmp_path, [*KIMI_088, "--dp-size", "2"])
    sim.wait_ready()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda _: post(sim.url + "/generate", {"text": "x" * 800}, 200), range(4)))
    sim.stop()
    records = sim.records()
    decode_tags = {tuple(sorted(r["tags"].items())) for r in records if r["kind"] == "decode"}
    assert decode_tags == {(("DP", 0), ("TP", 0)), (("DP", 1), ("TP", 0))}
    capacity = [r for r in records if r["kind"] == "capacity"]
    assert [c["tags"] for c in capacity] == [{"DP": 0, "TP": 0}, {"DP": 1, "TP": 0}]
