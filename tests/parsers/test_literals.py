"""Edge cases as literal strings: one behaviour per test."""

from __future__ import annotations

from datetime import date

import pytest

from kvwatch.parsers import create_parser
from kvwatch.parsers.auto import SNIFF_LINES, AutoParser
from kvwatch.parsers.sglang import SglangParser, field_name, parse_batch
from kvwatch.parsers.timestamps import to_epoch
from kvwatch.parsers.values import field_value

DECODE = (
    "[2026-02-24 12:49:14 TP0] Decode batch, #running-req: 72, #token: 153179, token usage: 0.96, "
    "cuda graph: True, gen throughput (token/s): 930.63, #queue-req: 79"
)


@pytest.mark.parametrize(
    ("key", "name"),
    [
        ("#running-req", "running_req"),
        ("#token", "token"),
        ("token usage", "token_usage"),
        ("gen throughput (token/s)", "gen_throughput"),
        ("input throughput (token/s)", "input_throughput"),
        ("cuda graph", "cuda_graph"),
        ("#full token", "full_token"),
        ("pre-allocated usage", "pre_allocated_usage"),
        ("est. read BW (GB/s per GPU)", "est_read_bw"),
    ],
)
def test_field_name_rule(key: str, name: str) -> None:
    assert field_name(key) == name


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("72", 72),
        ("0.96", 0.96),
        ("True", True),
        ("False", False),
        ("2.76%", 0.0276),
        ("-1", -1),
        ("75.03 GB", 75.03),
        ("1e999", "1e999"),  # not finite: kept as text
        ("nan", None),  # a NaN is no number and no text: None, so numeric columns stay numeric
        ("nan%", None),  # SGLang `fwd occupancy: nan%`
        ("0.1474 -> 0.1845", "0.1474 -> 0.1845"),
    ],
)
def test_field_value(raw: str, value: object) -> None:
    assert field_value(raw) == value
    assert type(field_value(raw)) is type(value)


def test_trailing_comma_and_separators_do_not_change_the_record() -> None:
    plain = parse_batch(1, DECODE)
    assert parse_batch(1, DECODE + ", ") == plain
    assert parse_batch(1, DECODE + ",") == plain
    assert parse_batch(1, DECODE.replace("Decode batch,", "Decode batch.")) == plain
    assert parse_batch(1, DECODE + "\r") == plain


def test_access_lines_are_counted_not_recorded() -> None:
    parser = SglangParser()
    assert (
        parser.feed(1, '[2024-12-13 01:45:26] INFO:     127.0.0.1:40418 - "GET / HTTP/1.1" 404 Not Found')
        == []
    )
    assert parser.health.as_dict() == {
        "lines": 1, "records": 0, "unparsed": 0, "access": 1, "ignored": 0, "unknown_keys": 0,
    }


@pytest.mark.parametrize(
    "source", ["sglang", "vllm", "nvidia-smi", "prometheus", "client", "outputs", "auto"]
)
@pytest.mark.parametrize(
    "text", ["x" * 10_000_000, "\x00\x00[\x00] Decode batch, \x00: \x00", "\ufffd" * 1000, ""]
)
def test_hostile_lines_never_raise(source: str, text: str) -> None:
    parser = create_parser(source)
    parser.feed(1, text)
    parser.flush()
    assert parser.health.lines == 1


def test_a_traceback_at_the_end_comes_out_at_flush() -> None:
    parser = SglangParser()
    assert parser.feed(1, "Traceback (most recent call last):") == []
    assert parser.feed(2, '  File "x.py", line 1, in <module>') == []
    assert parser.feed(3, "KeyError: 'x'") == []
    (record,) = parser.flush()
    assert (record["event"], record["line"], record["exception"]) == ("error", 1, "KeyError: 'x'")


def test_time_only_stamp_is_kept_as_logged() -> None:
    record = parse_batch(1, "[04:40:55 TP0] Decode batch. #running-req: 2, #token: 4078")
    assert record is not None
    assert record["ts"] == "04:40:55"


@pytest.mark.parametrize(
    ("ts", "day", "epoch"),
    [
        ("2026-02-24T12:49:14", None, 1771937354.0),
        ("2026-02-24T12:49:14.250", None, 1771937354.25),
        ("2026-02-24 12:49:14", None, 1771937354.0),
        ("12:49:14", date(2026, 2, 24), 1771937354.0),
        ("02-24T12:49:14", date(2026, 1, 1), 1771937354.0),
        ("12:49:14", None, None),
        ("2026-02-30T00:00:00", None, None),
        ("garbage", date(2026, 1, 1), None),
    ],
)
def test_to_epoch(ts: str, day: date | None, epoch: float | None) -> None:
    assert to_epoch(ts, day) == epoch


def test_auto_defaults_to_sglang_when_nothing_is_decisive() -> None:
    parser = create_parser("auto")
    assert isinstance(parser, AutoParser)
    for line_no in range(1, SNIFF_LINES):
        assert parser.feed(line_no, "hello") == []
    parser.feed(SNIFF_LINES, "hello")
    assert parser.chosen == "sglang"
    assert parser.health.lines == SNIFF_LINES


def test_auto_picks_vllm_and_replays_held_lines() -> None:
    parser = create_parser("auto")
    assert parser.feed(1, "(APIServer pid=1) INFO:     Application startup complete.") != []
    assert getattr(parser, "chosen", None) == "vllm"


def test_outputs_reports_only_changes() -> None:
    parser = create_parser("outputs", file="a.jsonl")
    assert parser.flush() == [{"kind": "completions", "line": 0, "file": "a.jsonl", "count": 0}]
    assert parser.flush() == []
    parser.feed(1, '{"a": 1}')
    parser.feed(2, "   ")
    assert parser.flush() == [{"kind": "completions", "line": 1, "file": "a.jsonl", "count": 1}]


def test_nvidia_smi_header_can_change_the_columns() -> None:
    parser = create_parser("nvidia-smi")
    parser.feed(1, "index, temperature.gpu, power.draw [W]")
    assert parser.feed(2, "3, 70, 500.5 W") == [
        {"kind": "gpu", "line": 2, "gpu": 3, "temp_c": 70, "power_w": 500.5}
    ]


def test_prometheus_scrape_ends_at_flush() -> None:
    parser = create_parser("prometheus")
    assert parser.feed(1, 'sglang:token_usage{model_name="m",tp_rank="0"} 0.5') == []
    (record,) = parser.flush()
    assert (record["token_usage"], record["tags"]) == (0.5, {"TP": 0})
    assert parser.flush() == []


def test_startup_chatter_is_ignored_not_unparsed() -> None:
    parser = create_parser("sglang")
    assert parser.feed(1, "[2026-12-02 16:48:30 TP0] Load weight begin. avail mem=139.10 GB") == []
    assert parser.feed(2, "garbage that is no log line at all") == []
    assert (parser.health.ignored, parser.health.unparsed) == (1, 1)


def test_a_batch_line_of_100000_fields_is_read_without_learning_its_shape() -> None:
    # Learning a shape builds one regex for the whole line: for 100,000 fields that took minutes.
    from kvwatch.parsers.shapes import MAX_SHAPE_FIELDS, BatchShapes

    wide = "[2026-02-24 12:49:14 TP0] Decode batch, " + ", ".join(f"k{i}: {i}" for i in range(100_000))
    assert BatchShapes().learn("decode", wide) is None
    narrow = "[2026-02-24 12:49:14 TP0] Decode batch, " + ", ".join(f"k{i}: {i}" for i in range(MAX_SHAPE_FIELDS))
    assert BatchShapes().learn("decode", narrow) is not None
    (record,) = create_parser("sglang").feed(1, wide)
    assert record["k0"] == 0 and record["k99999"] == 99_999 and len(record) == 100_000 + 4
