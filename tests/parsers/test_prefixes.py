"""Line prefixes as literal strings: what is peeled off, what is kept, and that a prefix never
becomes a field. Shapes from public SGLang/vLLM/Ray/Dynamo logs (tests/parsers/cases/SOURCES.md)."""

from __future__ import annotations

import pytest

from kvwatch.parsers import create_parser
from kvwatch.parsers.header import parse_header
from kvwatch.parsers.prefixes import peel, strip_process, strip_repeats, zone

VLLM_STATS = (
    "INFO 08-05 10:11:12 [loggers.py:123] Engine 000: Avg prompt throughput: 12.5 tokens/s, Avg generation "
    "throughput: 40.0 tokens/s, Running: 3 reqs, Waiting: 1 reqs, GPU KV cache usage: 50.0%, "
    "Prefix cache hit rate: 0.0%"
)
CAPACITY = "max_total_num_tokens=201681, chunked_prefill_size=8192, max_prefill_tokens=16384"
STATS_FIELDS = {
    "kind", "line", "ts", "engine", "prompt_throughput", "gen_throughput", "running_req", "queue_req",
    "token_usage", "prefix_cache_hit_rate",
}


@pytest.mark.parametrize(
    ("text", "rest"),
    [
        ("(APIServer pid=12345) INFO x", "INFO x"),
        ("(RayWorkerWrapper pid=123, ip=10.0.0.1) INFO x", "INFO x"),
        ("(EngineCore_0 pid=77) INFO x", "INFO x"),
        ("(EngineCore_DP0 pid=846) (RayWorkerWrapper pid=1027) [ERROR] x", "[ERROR] x"),
        ("(pid=632, ip=10.244.1.107) INFO x", "INFO x"),
        ("(SGLangEngine(rank=0) pid=41820) [2026-03-22 13:53:37 TP0] x", "[2026-03-22 13:53:37 TP0] x"),
        ("(raylet) A worker died", "(raylet) A worker died"),  # Ray's own process, no pid: not a prefix
        ("(mixed #running-req: 3). #new-seq: 1", "(mixed #running-req: 3). #new-seq: 1"),
    ],
)
def test_strip_process(text: str, rest: str) -> None:
    assert strip_process(text) == rest


@pytest.mark.parametrize(
    ("text", "rest"),
    [
        ("#queue-req: 0 [repeated 7x across cluster]", "#queue-req: 0"),
        ("#queue-req: 1\x1b[32m [repeated 3x across cluster]\x1b[0m", "#queue-req: 1"),
        (
            "Global seed set to 888 [repeated 7x across cluster] (Ray deduplicates logs by default. Set "
            "RAY_DEDUP_LOGS=0 to disable log deduplication, or see https://docs.ray.io/x.html for more options.)",
            "Global seed set to 888",
        ),
        ("#queue-req: 0", "#queue-req: 0"),
        ("talk about [things across cluster] here", "talk about [things across cluster] here"),
    ],
)
def test_strip_repeats(text: str, rest: str) -> None:
    assert strip_repeats(text) == rest


@pytest.mark.parametrize(
    ("text", "ts", "tz", "rest"),
    [
        ("2025-06-06T20:31:47.123456789Z [2025-06-06 20:31:47] D", "2025-06-06T20:31:47.123456", "+00:00",
         "[2025-06-06 20:31:47] D"),
        ("2026-07-08T22:28:50.274739Z  INFO a.b: D", "2026-07-08T22:28:50.274739", "+00:00", " INFO a.b: D"),
        ("2026-07-09T00:28:53+0200 x", "2026-07-09T00:28:53", "+02:00", "x"),
        ("2026-07-09T00:28:53 x", "2026-07-09T00:28:53", None, "x"),
        ("1779264164496\t2026-05-20T08:02:44.496Z\t[x] D", "2026-05-20T08:02:44.496", "+00:00", "[x] D"),
        ("2026-05-12T07:51:39.3Z (APIServer pid=1) INFO y", "2026-05-12T07:51:39.3", "+00:00", "INFO y"),
        ("2026-05-12T07:51:39Z   File \"x.py\"", "2026-05-12T07:51:39", "+00:00", "  File \"x.py\""),
        ("2025-06-06 20:31:47,123 INFO x", None, None, "2025-06-06 20:31:47,123 INFO x"),  # a layout's own stamp
    ],
)
def test_peel(text: str, ts: str | None, tz: str | None, rest: str) -> None:
    assert tuple(peel(text)) == (ts, tz, rest)


def test_zone() -> None:
    assert [zone(z) for z in ("Z", "+0530", "-07:00", None)] == ["+00:00", "+05:30", "-07:00", None]


@pytest.mark.parametrize(
    ("text", "ts", "tz", "tags", "message"),
    [
        ("2025-06-06 20:31:47,123 [INFO] sglang.srt.managers.scheduler: Decode batch", "2025-06-06T20:31:47.123",
         None, {}, "Decode batch"),
        ("2025-06-06 20:31:47,123 INFO sglang.srt.managers.scheduler: Decode batch", "2025-06-06T20:31:47.123",
         None, {}, "Decode batch"),
        ("2025-02-26 15:44:36,973 - INFO - flashinfer.jit: Loading JIT ops: cascade", "2025-02-26T15:44:36.973",
         None, {}, "Loading JIT ops: cascade"),
        ("[2025-06-06 20:31:47][scheduler.py:123][INFO]: Decode batch", "2025-06-06T20:31:47", None, {},
         "Decode batch"),
        ("2025-10-29 02:27:35 INFO 8900 [ DP15 TP15 EP15 scheduler_metrics_mixin.py:222] Decode batch.",
         "2025-10-29T02:27:35", None, {"DP": 15, "TP": 15, "EP": 15}, "Decode batch."),
        ("2026-07-08T22:28:50.274739Z  INFO scheduler_metrics_mixin.report_prefill_stats: Prefill batch",
         "2026-07-08T22:28:50.274739", "+00:00", {}, "Prefill batch"),
        ("2026-06-23T15:16:14Z [PP1 ATTN_CP0 TP0] Scheduler hit an exception", "2026-06-23T15:16:14", "+00:00",
         {"PP": 1, "ATTN_CP": 0, "TP": 0}, "Scheduler hit an exception"),
        ("2025-06-06T20:31:47.123456789Z [2025-06-06 20:31:47 PP0 ATTN_CP0 TP0 EP0] Decode batch",
         "2025-06-06T20:31:47", None, {"PP": 0, "ATTN_CP": 0, "TP": 0, "EP": 0}, "Decode batch"),
        ("[2026-01-01 12:00:00.123 DP1 TP1] Decode batch", "2026-01-01T12:00:00.123", None, {"DP": 1, "TP": 1},
         "Decode batch"),
        ("(APIServer pid=66) INFO 09-02 08:46:23 [v1/metrics/loggers.py:271] 1 Engines Aggregated: x",
         "09-02T08:46:23", None, {}, "1 Engines Aggregated: x"),
        # No level: `Engine:` is the message's own, not a logger name.
        ("2025-06-06 20:31:47 Engine: stopped", "2025-06-06T20:31:47", None, {}, "Engine: stopped"),
    ],
)
def test_parse_header_layouts(text: str, ts: str, tz: str | None, tags: dict[str, int], message: str) -> None:
    header = parse_header(text)
    assert (header.ts, header.tz, header.tags, header.message, header.found) == (ts, tz, tags, message, True)


PREFIXES = [
    "",
    "(APIServer pid=12345) ",
    "(RayWorkerWrapper pid=123, ip=10.0.0.1) ",
    "(EngineCore_DP0 pid=846) (RayWorkerWrapper pid=1027) ",
    "2026-05-12T07:51:39.301802920Z ",
    "2026-05-12T07:51:39.301802920Z (APIServer pid=1) ",
    "1779264164496\t2026-05-20T08:02:44.496Z\t(APIServer pid=1) ",
]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_prefix_never_becomes_a_vllm_field(prefix: str) -> None:
    parser = create_parser("vllm")
    (record,) = parser.feed(1, prefix + VLLM_STATS + " [repeated 2x across cluster]")
    assert set(record) == STATS_FIELDS
    assert (record["ts"], record["prompt_throughput"], record["queue_req"]) == ("08-05T10:11:12", 12.5, 1)


@pytest.mark.parametrize(
    "prefix",
    [
        "[2025-06-06 20:31:47 TP0] ",
        "2025-06-06T20:31:47.123456789Z [2025-06-06 20:31:47 TP0] ",
        "(SGLangEngine pid=41820) [2025-06-06 20:31:47 TP0] ",
        "2025-06-06 20:31:47,123 [INFO] sglang.srt.model_executor.model_runner: ",
        "2025-06-06 20:31:47,123 - INFO - sglang.srt.model_executor.model_runner: ",
        "[2025-06-06 20:31:47][model_runner.py:321][INFO]: ",
        "2025-06-06T20:31:47Z  INFO model_runner.init_memory_pool: ",
    ],
)
def test_capacity_is_found_behind_any_prefix(prefix: str) -> None:
    parser = create_parser("sglang")
    (record,) = parser.feed(1, prefix + CAPACITY)
    assert record["kind"] == "capacity"
    assert record["ts"].startswith("2025-06-06T20:31:47")
    assert {k: record[k] for k in ("max_total_num_tokens", "chunked_prefill_size")} == {
        "max_total_num_tokens": 201681,
        "chunked_prefill_size": 8192,
    }


def test_an_unknown_line_is_unparsed_with_a_sample() -> None:
    parser = create_parser("auto")
    parser.feed(1, "[2026-01-05 11:11:12 TP0] Decode batch, #running-req: 4, token usage: 0.10, #queue-req: 0")
    assert parser.feed(2, "deepseek-v2-5-0:5969:5969 [0] NCCL INFO Bootstrap : Using eth0") == []
    parser.feed(3, "another line nobody knows")
    assert (parser.health.unparsed, parser.health.sample_line) == (2, 2)
    assert parser.health.sample == "deepseek-v2-5-0:5969:5969 [0] NCCL INFO Bootstrap : Using eth0"


def test_a_vllm_stats_line_without_numbers_is_unparsed_not_a_record() -> None:
    parser = create_parser("vllm")
    line = "INFO 01-20 09:00:30 [loggers.py:236] Engine 001: Avg prompt throughput: x, Avg generation throughput: y"
    assert parser.feed(1, line) == []
    assert parser.feed(2, "INFO 01-20 09:00:31 [api_server.py:1] Starting vLLM API server") == []
    assert (parser.health.unparsed, parser.health.ignored) == (1, 1)


def test_nan_occupancy_is_none_and_the_rest_of_the_line_is_read() -> None:
    parser = create_parser("sglang")
    line = (
        "[2026-07-21 08:04:41 TP0 EP0] Prefill batch, #new-seq: 1, #new-token: 64, input throughput (token/s): "
        "178.18, est. prefill TFLOPS/s (per GPU): 9.90, fwd occupancy: nan%"
    )
    (record,) = parser.feed(1, line)
    assert record["fwd_occupancy"] is None
    assert (record["input_throughput"], record["est_prefill_tflops_s"]) == (178.18, 9.9)


def test_shipped_and_ray_prefixed_batch_lines_take_the_fast_path_with_the_same_records() -> None:
    decode = (
        "[2026-02-24 12:49:{:02d} TP0] Decode batch, #running-req: 72, #token: 153179, token usage: 0.96, "
        "cuda graph: True, gen throughput (token/s): 930.63, #queue-req: 79"
    )
    plain = [decode.format(second) for second in range(3)]
    prefixed = [f"2026-02-24T12:49:{s:02d}.318860177Z {line}" for s, line in enumerate(plain[:2])]
    prefixed.append("(SGLangEngine pid=41820) " + plain[2])
    expected = [record for n, line in enumerate(plain, 1) for record in create_parser("sglang").feed(n, line)]
    parser = create_parser("sglang")
    assert [record for n, line in enumerate(prefixed, 1) for record in parser.feed(n, line)] == expected
    assert len(parser._shapes.shapes["decode"]) == 1  # type: ignore[attr-defined]  # learnt once, then reused
