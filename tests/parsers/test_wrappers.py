"""Whatever wraps the engine's line, the engine's header is found; a key that is no field name is
counted, never a field (parsers/prefixes.py, parsers/joins.py, parsers/values.field_key)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvwatch.app.metrics_catalog import CATALOG
from kvwatch.parsers import create_parser
from kvwatch.parsers.header import parse_header

VLLM = (
    "INFO 07-02 08:34:{s:02d} [loggers.py:273] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
    "throughput: 41.7 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 2.0%, Prefix cache hit rate: 0.0%"
)
SGLANG = (
    "[2026-02-24 12:49:{s:02d} TP0] Decode batch, #running-req: 72, #token: 153179, token usage: 0.96, "
    "cuda graph: True, gen throughput (token/s): 930.63, #queue-req: 79"
)
# Shapes of what launchers and shippers put in front (tests/parsers/cases/SOURCES.md), made distinct by n.
WRAPPERS = (
    "vllm-{n}  | ", "Apr 05 18:07:38 gpu{n} bash[{n}]: ", "[pod/vllm-{n}/vllm] ", "{n}: ", "> ",
    "2025-05-30 09:55:29.{m:03d} | ", "(RayWorkerWrapper(rank=({n}, 1)) pid={n}, ip=10.0.0.2) ",
    "node{n} | (APIServer pid={n}) ", "\x1b[0;36m(EngineCore_DP0 pid={n})\x1b[0;0m ",
)


def wrapped(n: int, line: str) -> str:
    return WRAPPERS[n % len(WRAPPERS)].format(n=n, m=n % 1000) + line


@pytest.mark.parametrize(("source", "line"), [("vllm", VLLM), ("sglang", SGLANG)])
def test_ten_thousand_distinct_wrappers_are_all_read_with_the_fields_of_the_bare_line(source: str, line: str) -> None:
    bare = create_parser(source).feed(1, line.format(s=1))[0]
    parser = create_parser(source)
    names: set[str] = set()
    for n in range(10_000):
        records = parser.feed(n + 1, wrapped(n, line.format(s=n % 60)))
        assert len(records) == 1, wrapped(n, line.format(s=n % 60))
        record = records[0]
        names |= record.keys()
        assert record["ts"].endswith(f":{n % 60:02d}")
        assert {k: v for k, v in record.items() if k not in ("line", "ts")} == {
            k: v for k, v in bare.items() if k not in ("line", "ts")
        }
    assert names == bare.keys()
    assert parser.health.records == 10_000 and parser.health.unparsed == 0 and parser.health.unknown_keys == 0


@pytest.mark.parametrize("source", ["vllm", "sglang"])
def test_ten_thousand_made_up_keys_are_counted_and_never_fields(source: str) -> None:
    line = VLLM if source == "vllm" else SGLANG
    parser = create_parser(source)
    names: set[str] = set()
    for n in range(10_000):
        made_up = f", {n:05d} {n}: 7" if n % 2 else f", node {n} pid={n}: 7"
        records = parser.feed(n + 1, line.format(s=n % 60) + made_up)
        assert len(records) == 1
        names |= records[0].keys()
    assert names == create_parser(source).feed(1, line.format(s=0))[0].keys()
    assert parser.health.unknown_keys == 10_000


@pytest.mark.parametrize(
    ("key", "name"),
    [
        ("#running-req", "running_req"), ("gen throughput (token/s)", "gen_throughput"),
        ("est. prefill TFLOPS/s (per GPU)", "est_prefill_tflops_s"), ("mixed #running-req", "mixed_running_req"),
        ("Avg Draft acceptance rate", "avg_draft_acceptance_rate"), ("#swa token", "swa_token"),
        # a wrapper glued to a key, stamps, pids, paths, digits-only words: no field
        ("vllm-1  | INFO 07-02 08:34:45 [loggers.py:273] Engine 000", ""), ("Engine 000", ""),
        ("2026-02-24 12:49:14 token", ""), ("pid=123", ""), ("/var/log/x.log", ""), ("12 34", ""),
        ("a b c d e f g h i", ""), ("x" * 80, ""),
    ],
)
def test_field_key_accepts_only_a_field_names_shape(key: str, name: str) -> None:
    from kvwatch.parsers.values import field_key  # here: the module's other tests also run against older parsers

    assert field_key(key) == name


def test_every_catalog_metric_has_a_field_names_shape() -> None:
    from kvwatch.parsers.values import field_key

    for metric in CATALOG:
        assert field_key(metric) == metric, metric


@pytest.mark.parametrize(
    ("text", "ts", "message"),
    [
        # a wrapper's stamp is not the line's when the engine's line has one
        ("2025-05-30 09:55:29.284 | INFO 05-30 07:55:29 [loggers.py:116] Engine 000: x", "05-30T07:55:29",
         "Engine 000: x"),
        ("Apr 05 18:07:38 h bash[5]: [2026-04-05 18:07:38 DP1 TP1] Decode", "2026-04-05T18:07:38", "Decode"),
        # a stamp inside quoted text is another message's, not a header behind a wrapper
        ("Receive: obj='[2026-04-05 18:07:38] Decode'", None, "Receive: obj='[2026-04-05 18:07:38] Decode'"),
        # a docker stamp in front of a compose prefix: the wrapper's stamp stays the time without the engine's
        ("2026-05-12T08:01:39.331Z vllm-1  | (APIServer pid=1) INFO:     Started", "2026-05-12T08:01:39.331",
         "vllm-1  | (APIServer pid=1) INFO:     Started"),
    ],
)
def test_the_engine_header_is_found_behind_a_wrapper(text: str, ts: str | None, message: str) -> None:
    header = parse_header(text)
    assert (header.ts, header.message) == (ts, message)


def test_a_joined_line_gives_both_records_and_capacity_is_read_where_it_stands() -> None:
    parser = create_parser("sglang")
    joined = SGLANG.format(s=1) + " " + SGLANG.format(s=2)
    assert [r["ts"] for r in parser.feed(1, joined)] == ["2026-02-24T12:49:01", "2026-02-24T12:49:02"]
    pasted = "[2026-02-24 12:40:02 TP0] Memory pool end. avail mem=6.95 GB max_total_num_tokens=2980168, context_len=8"
    assert parser.feed(2, pasted) == [{"kind": "capacity", "line": 2, "ts": "2026-02-24T12:40:02", "tags": {"TP": 0},
                                       "max_total_num_tokens": 2980168, "context_len": 8}]
    # a process prefix inside a message is not a second line
    crash = "[2026-03-01 10:00:03] Subprocess scheduler_0 (pid=1234) crashed with exit code -6."
    assert [r["ts"] for r in parser.feed(3, crash)] == ["2026-03-01T10:00:03"]


PLAIN = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ _|>:-`"
RESERVED = {"kind", "line", "ts", "tz", "tags", "engine", "engines"}


def is_field_name(name: str) -> bool:
    """What a series may be named: a name field_key gives (lowercase words, no digits-only word)."""
    words = name.split("_")
    return name.isascii() and name[:1].isalpha() and name == name.lower() and all(
        word and (word.isalnum() and not word.isdigit()) for word in words)


@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@given(wrapper=st.text(PLAIN, max_size=40), n=st.integers(0, 59), source=st.sampled_from(["vllm", "sglang"]))
def test_any_plain_wrapper_gives_the_bare_lines_record(wrapper: str, n: int, source: str) -> None:
    line = (VLLM if source == "vllm" else SGLANG).format(s=n)
    bare = create_parser(source).feed(1, line)
    assert create_parser(source).feed(1, wrapper + line) == bare


@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@given(wrapper=st.text(max_size=60), tail=st.text(max_size=30), source=st.sampled_from(["vllm", "sglang"]))
def test_whatever_wraps_a_line_no_record_has_a_field_outside_a_field_names_shape(
    wrapper: str, tail: str, source: str
) -> None:
    line = (VLLM if source == "vllm" else SGLANG).format(s=1)
    for record in create_parser(source).feed(1, wrapper + line + tail):
        assert all(is_field_name(key) for key in record.keys() - RESERVED), record
