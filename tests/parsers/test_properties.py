"""Hypothesis properties: parsers never raise, values round-trip, and both fast paths agree with the
general parser."""

from __future__ import annotations

import json
import math
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvwatch.parsers import PARSERS, create_parser
from kvwatch.parsers.columnar import ColumnarSglang
from kvwatch.parsers.sglang import SglangParser, parse_batch

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LOGGISH = st.lists(
    st.sampled_from(
        [
            "[",
            "]",
            "2026-02-24 12:49:14",
            "04:40:55",
            " TP0",
            " DP3 TP3",
            "Decode batch",
            "Prefill batch",
            ", ",
            ": ",
            ".",
            "#running-req",
            "token usage",
            "0.96",
            "72",
            "True",
            "%",
            "Traceback (most recent call last):",
            "  File",
            "Error: x",
            "(SGLangEngine pid=1) ",
            ' - "GET / HTTP/1.1" 200',
            "\r",
            "\x00",
            "\ufffd",
            "=",
            "max_total_num_tokens=",
            "server_args=ServerArgs(",
            "{",
            "}",
            "'",
            "|",
            "/",
            "1604/3500 [",
            "%|",
            "Engine 000: ",
            "Avg generation throughput: ",
            "# TYPE ",
            "sglang:token_usage{",
            '="',
            '"',
            "2026/12/02 14:53:08.174, ",
        ]
    ),
    max_size=12,
).map("".join)
TEXT = st.one_of(st.text(max_size=300), LOGGISH)


def _general(parser: Any, line_no: int, text: str) -> list[dict[str, Any]]:
    """The parser's own logic without the feed() safety net, so a bug shows as an exception."""
    inner = getattr(parser, "_feed", None)
    if inner is not None:
        parser.health.lines += 1
        return inner(line_no, text)  # type: ignore[no-any-return]
    return parser.feed(line_no, text)  # type: ignore[no-any-return]


@SETTINGS
@given(source=st.sampled_from(sorted(PARSERS)), lines=st.lists(TEXT, max_size=20))
def test_parsers_never_raise_and_give_json_with_finite_numbers(source: str, lines: list[str]) -> None:
    parser = create_parser(source)
    records = []
    for line_no, text in enumerate(lines, 1):
        records += _general(parser, line_no, text)
    records += parser.flush()
    json.dumps(records, allow_nan=False)
    for record in records:
        assert isinstance(record["kind"], str)
        assert isinstance(record["line"], int)


KEYS = st.sampled_from(
    [
        "#running-req",
        "#token",
        "token usage",
        "#full token",
        "full token usage",
        "#swa token",
        "swa token usage",
        "mamba usage",
        "cuda graph",
        "accept len",
        "#queue-req",
        "gen throughput (token/s)",
        "#full token",
        "pre-allocated usage",
        "#pending-token",
    ]
)
VALUES = st.one_of(
    st.integers(min_value=0, max_value=10**12),
    st.floats(min_value=0, max_value=1e9, allow_nan=False).map(lambda x: round(x, 2)),
    st.booleans(),
)
TAGS = st.dictionaries(st.sampled_from(["DP", "PP", "ATTN_CP", "TP", "EP"]), st.integers(0, 99), max_size=3)


def _tag_text(tags: dict[str, int]) -> str:
    return "".join(f" {name}{rank}" for name, rank in tags.items())


def _render(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


@SETTINGS
@given(
    kind=st.sampled_from(["Decode", "Prefill"]),
    pairs=st.dictionaries(KEYS, VALUES, min_size=1, max_size=8),
    tags=TAGS,
    separator=st.sampled_from([". ", ", ", " [12], "]),
    trailer=st.sampled_from(["", ", ", ",", " "]),
    millis=st.sampled_from(["", ".123"]),
)
def test_batch_fields_round_trip(
    kind: str, pairs: dict[str, Any], tags: dict[str, int], separator: str, trailer: str, millis: str
) -> None:
    tag_text = "".join(f" {name}{rank}" for name, rank in tags.items())
    body = ", ".join(f"{key}: {_render(value)}" for key, value in pairs.items())
    line = f"[2026-02-24 12:49:14{millis}{tag_text}] {kind} batch{separator}{body}{trailer}"
    record = parse_batch(7, line)
    assert record is not None
    assert (record["kind"], record["line"], record["ts"]) == (kind.lower(), 7, f"2026-02-24T12:49:14{millis}")
    assert record["tags"] == tags
    for key, value in pairs.items():
        name = key.lstrip("#").split(" (")[0].replace(" ", "_").replace("-", "_")
        parsed = record[name]
        assert type(parsed) is type(value)
        assert parsed == value or math.isclose(parsed, value)


LINES = st.one_of(
    st.builds(
        lambda kind, pairs, tags, trailer, millis, separator: (
            f"[2026-02-24 12:49:1{len(pairs) % 10}{millis}{_tag_text(tags)}] {kind} batch{separator}"
            + ", ".join(f"{k}: {_render(v)}" for k, v in pairs.items())
            + trailer
        ),
        st.sampled_from(["Decode", "Prefill"]),
        st.dictionaries(KEYS, VALUES, min_size=1, max_size=5),
        TAGS,
        st.sampled_from(["", ", ", "\r", ",", ".", ", \r", ", , ", ". "]),
        st.sampled_from(["", ".5", ".123", ".123456"]),
        st.sampled_from([", ", ", ", ". ", ",", "."]),
    ),
    st.just('[2026-02-24 12:49:14] INFO:     127.0.0.1:1 - "POST /generate HTTP/1.1" 200 OK'),
    st.just("[2026-02-24 12:49:15 TP0] Scheduler hit an exception: Traceback (most recent call last):"),
    st.just('  File "x.py", line 1, in f'),
    st.just("ValueError: boom"),
    st.just(""),
    TEXT,
)


@SETTINGS
@given(lines=st.lists(LINES, max_size=40))
def test_shape_fast_path_gives_what_the_general_parser_gives(lines: list[str]) -> None:
    fast, slow = SglangParser(), SglangParser()
    slow._shapes.parse = lambda kind, line_no, text: None  # type: ignore[method-assign]
    for line_no, text in enumerate(lines, 1):
        for _ in range(2):  # the second time a learnt shape may answer
            assert _general(fast, line_no, text) == _general(slow, line_no, text)
    assert fast.flush() == slow.flush()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(LINES, max_size=60), cut=st.integers(0, 60))
def test_columnar_path_gives_what_the_line_parser_gives(lines: list[str], cut: int) -> None:
    lines = [line.replace("\n", " ") for line in lines]
    reference = SglangParser()
    expected = [r for n, t in enumerate(lines, 1) for r in reference.feed(n, t.removesuffix("\r"))]
    expected += reference.flush()
    columnar_parser = SglangParser()
    columnar = ColumnarSglang(columnar_parser)
    got: list[dict[str, Any]] = []
    for first, block in ((0, lines[:cut]), (cut, lines[cut:])):
        if block:
            tables, records = columnar.block(first + 1, pa.array(block, pa.string()))
            got += records + [_drop_nulls(row) for table in tables for row in table.to_pylist()]
    got += columnar_parser.flush()
    assert sorted(got, key=_order) == sorted(expected, key=_order)
    assert columnar_parser.health == reference.health


def _drop_nulls(row: dict[str, Any]) -> dict[str, Any]:
    row = {key: value for key, value in row.items() if value is not None}
    row["tags"] = {key: value for key, value in (row.get("tags") or {}).items() if value is not None}
    return row


def _order(record: dict[str, Any]) -> tuple[int, str]:
    return record["line"], json.dumps(record, sort_keys=True)
