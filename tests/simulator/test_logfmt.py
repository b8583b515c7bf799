"""Golden shapes: the simulator's lines against the format strings of the reference, per version.

Expected strings are written out by hand from reference/sglang-and-vllm-log-formats.md (§1.2, §1.3,
§3, §4); then every line must also parse fully with kvwatch's own SGLang parser.
"""

from __future__ import annotations

import io
from datetime import datetime

import pytest

from kvwatch.parsers import create_parser
from kvwatch.simulator import logfmt
from kvwatch.simulator.clock import SimClock
from kvwatch.simulator.logwriter import LogWriter

V = logfmt.VERSIONS

DECODE = {
    "0.3.0": "Decode batch. #running-req: 72, #token: 153179, token usage: 0.96, "
             "gen throughput (token/s): 930.63, #queue-req: 79",
    "0.4.6": "Decode batch. #running-req: 72, #token: 153179, token usage: 0.96, "
             "gen throughput (token/s): 930.63, #queue-req: 79",
    "0.4.10": "Decode batch. #running-req: 72, #token: 153179, token usage: 0.96, cuda graph: True, "
              "gen throughput (token/s): 930.63, #queue-req: 79, ",
    "0.5.8": "Decode batch, #running-req: 72, #token: 153179, token usage: 0.96, cuda graph: True, "
             "gen throughput (token/s): 930.63, #queue-req: 79, ",
    "0.5.23": "Decode batch, #running-req: 72, #token: 153179, token usage: 0.96, cuda graph: True, "
              "gen throughput (token/s): 930.63, #queue-req: 79",
}

PREFILL = {
    "0.3.0": "Prefill batch. #new-seq: 4, #new-token: 8192, #cached-token: 291, cache hit rate: 2.76%, "
             "#running-req: 1, #queue-req: 38",
    "0.4.6": "Prefill batch. #new-seq: 4, #new-token: 8192, #cached-token: 291, token usage: 0.04, "
             "#running-req: 1, #queue-req: 38",
    "0.4.10": "Prefill batch. #new-seq: 4, #new-token: 8192, #cached-token: 291, token usage: 0.04, "
              "#running-req: 1, #queue-req: 38, ",
    "0.5.8": "Prefill batch, #new-seq: 4, #new-token: 8192, #cached-token: 291, token usage: 0.04, "
             "#running-req: 1, #queue-req: 38, ",
    "0.5.23": "Prefill batch, #new-seq: 4, #new-token: 8192, #cached-token: 291, token usage: 0.04, "
              "#running-req: 1, #queue-req: 38, #pending-token: 109585, cuda graph: False, "
              "input throughput (token/s): 559.53",
}

CAPACITY = {
    "0.3.0": "max_total_num_tokens=201681, max_prefill_tokens=16384, max_running_requests=2049, "
             "context_len=163840",
    "0.4.6": "max_total_num_tokens=201681, chunked_prefill_size=8192, max_prefill_tokens=16384, "
             "max_running_requests=2049, context_len=163840",
    "0.5.23": "max_total_num_tokens=201681, chunked_prefill_size=8192, max_prefill_tokens=16384, "
              "max_running_requests=2049, context_len=163840, available_gpu_mem=14.95 GB",
}

RETRACT = {
    "0.4.6": "Decode out of memory happened. #retracted_reqs: 1, #new_token_ratio: 0.1474 -> 0.1845",
    "0.4.10": "KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_token_ratio: 0.1474 -> 0.1845",
    "0.5.23": "KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_tokens_gained: 2400, "
              "#new_token_ratio: 0.1474 -> 0.1845",
}


@pytest.mark.parametrize("version", sorted(DECODE))
def test_decode_line_matches_the_version_format(version: str) -> None:
    assert logfmt.decode_line(V[version], 72, 153179, 0.9612, 930.634, 79, True) == DECODE[version]


@pytest.mark.parametrize("version", sorted(PREFILL))
def test_prefill_line_matches_the_version_format(version: str) -> None:
    line = logfmt.prefill_line(V[version], 4, 8192, 291, 0.04, 1, 38, 0.0276, 109585, 559.53)
    assert line == PREFILL[version]


@pytest.mark.parametrize("version", sorted(CAPACITY))
def test_capacity_line_matches_the_version_format(version: str) -> None:
    assert logfmt.capacity_line(V[version], 201681, 8192, 16384, 2049, 163840, 14.95) == CAPACITY[version]


@pytest.mark.parametrize("version", sorted(RETRACT))
def test_retract_line_matches_the_version_format(version: str) -> None:
    assert logfmt.retract_line(V[version], 1, 2400, 0.1474, 0.1845) == RETRACT[version]


def test_kv_cache_lines() -> None:
    assert logfmt.kv_cache_line(V["0.3.0"], 1, 1.0, "torch.bfloat16", True) is None
    assert (logfmt.kv_cache_line(V["0.4.10"], 132681, 18.22, "torch.bfloat16", False)
            == "KV Cache is allocated. #tokens: 132681, K size: 9.11 GB, V size: 9.11 GB")
    assert (logfmt.kv_cache_line(V["0.5.8"], 158983, 15.57, "torch.bfloat16", True)
            == "KV Cache is allocated. #tokens: 158983, KV size: 15.57 GB")
    assert (logfmt.kv_cache_line(V["0.5.23"], 158983, 15.57, "torch.bfloat16", True)
            == "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 158983, KV size: 15.57 GB")


def test_server_args_repr_by_version() -> None:
    args = {"model_path": "/m", "mem_fraction_static": 0.88}
    dataclass_repr = "server_args=ServerArgs(model_path='/m', mem_fraction_static=0.88)"
    assert logfmt.server_args_line(V["0.5.8"], args) == dataclass_repr
    assert logfmt.server_args_line(V["0.5.23"], args) == "server_args={'model_path': '/m', 'mem_fraction_static': 0.88}"


@pytest.mark.parametrize(("version", "tp_size", "dp_rank", "tag"), [
    ("0.3.0", 1, None, " TP0"),  # always tagged up to 0.4.6
    ("0.4.6", 1, None, " TP0"),
    ("0.4.10", 1, None, ""),  # no tag at tp=1 from 0.4.7
    ("0.5.23", 8, None, " TP0"),
    ("0.5.23", 8, 3, " DP3 TP0"),
])
def test_rank_tag(version: str, tp_size: int, dp_rank: int | None, tag: str) -> None:
    assert logfmt.rank_tag(V[version], 0, tp_size, dp_rank) == tag


@pytest.mark.parametrize(("version", "stamp"), [("0.3.0", "[14:05:21 TP0] "), ("0.5.23", "[2026-04-08 14:05:21 TP0] ")])
def test_prefix_time_format(version: str, stamp: str) -> None:
    out = io.StringIO()
    clock = SimClock(wall_start=datetime(2026, 4, 8, 14, 5, 21).timestamp())
    writer = LogWriter(out, V[version], clock, tp_size=8, pace=False)
    writer.rank(0.0, "x")
    assert out.getvalue() == f"{stamp}x\n"


def test_uvicorn_lines() -> None:
    assert logfmt.uvicorn_prefix(V["0.3.0"], "t") == "INFO:     "
    assert logfmt.uvicorn_prefix(V["0.5.23"], "2024-12-13 01:45:26") == "[2024-12-13 01:45:26] INFO:     "
    assert logfmt.access_line("127.0.0.1:40418", "GET", "/", 404) == '127.0.0.1:40418 - "GET / HTTP/1.1" 404 Not Found'


@pytest.mark.parametrize("version", sorted(DECODE))
def test_every_shape_parses_fully_with_the_kvwatch_parser(version: str) -> None:
    parser = create_parser("sglang")
    decode = parser.feed(1, f"[2026-02-24 12:49:14 TP0] {DECODE[version]}")
    prefill = parser.feed(2, f"[2026-02-24 12:49:15 TP0] {PREFILL[version]}")
    assert decode == [{
        "kind": "decode", "line": 1, "ts": "2026-02-24T12:49:14", "tags": {"TP": 0}, "running_req": 72,
        "token": 153179, "token_usage": 0.96, "gen_throughput": 930.63, "queue_req": 79,
        **({"cuda_graph": True} if V[version].cuda_graph_field else {}),
    }]
    record = prefill[0]
    assert (record["kind"], record["new_seq"], record["new_token"], record["cached_token"]) == ("prefill", 4, 8192, 291)
    assert (record["running_req"], record["queue_req"]) == (1, 38)
    assert record.get("token_usage", record.get("cache_hit_rate")) in (0.04, 0.0276)
    assert parser.health.unparsed == 0
