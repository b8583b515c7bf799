"""Bounded work per line and per host, through the real local collector and store: an over-long line is
not parsed, a record with hundreds of fields keeps 64, and a host's series stop growing at the cap while
the known ones keep flowing; /api/hosts shows what was dropped. Exports are streamed."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
from fastapi.testclient import TestClient

from kvwatch.app.main import create_app
from kvwatch.app.pipeline.bounds import MAX_FIELDS, MAX_LINE_BYTES, MAX_SERIES
from kvwatch.app.services import Services
from tests.app.slice_helpers import decode_line, start_services, wait_until

STAMP = "[2026-02-24 13:{minute:02d}:{second:02d} TP0] Decode batch, "


def wide_line(n: int, fields: int, prefix: str) -> str:
    """A decode line with `fields` made-up numeric fields after the real ones (keys of a field name's
    shape, `f k12`: a digits-only word would make them unknown keys, never fields)."""
    extra = ", ".join(f"{prefix} k{i}: {i}" for i in range(fields))
    return STAMP.format(minute=n // 60, second=n % 60) + f"#running-req: {n}, token usage: 0.50, {extra}\n"


def collect(tmp_path: Path, text: str, until: int) -> Services:
    (tmp_path / "server.log").write_text(text)
    services = start_services(tmp_path)
    services.start_collectors()
    wait_until(lambda: len(services.store.series("local", "running_req")[0]) >= until, timeout=30)
    return services


def dropped(services: Services) -> dict[str, int]:
    app = create_app(services, manage_collectors=False)
    with TestClient(app) as client:
        hosts = client.get("/api/hosts").json()
    return dict(hosts[0]["dropped"])


def test_a_long_line_is_not_parsed_and_is_counted(tmp_path: Path) -> None:
    padding = "x" * MAX_LINE_BYTES
    long_line = decode_line(2).replace("#queue-req: 7", f"#queue-req: 7, note: {padding}")
    services = collect(tmp_path, decode_line(1) + long_line + decode_line(3), until=2)
    try:
        assert services.store.series("local", "running_req")[1].tolist() == [1.0, 3.0]
        assert dropped(services)["long_lines"] == 1
    finally:
        services.stop()


def test_a_record_keeps_at_most_64_fields(tmp_path: Path) -> None:
    services = collect(tmp_path, wide_line(1, 500, "f") + decode_line(2), until=2)
    try:
        made_up = [m for m in services.store.metrics("local") if m.startswith("f_")]
        assert len(made_up) == MAX_FIELDS - 2  # running_req and token_usage came first
        assert dropped(services)["fields"] == 500 + 2 - MAX_FIELDS
    finally:
        services.stop()


def test_a_hosts_series_stop_at_the_cap_and_known_ones_keep_flowing(tmp_path: Path) -> None:
    lines = [wide_line(n, 60, f"s{n}") for n in range(1, 31)]  # 30 x 60 new series: 1800 > 1024
    services = collect(tmp_path, "".join(lines) + decode_line(31) + decode_line(32), until=32)
    try:
        metrics = services.store.metrics("local")
        assert len(metrics) <= MAX_SERIES
        assert {31.0, 32.0} <= set(services.store.series("local", "running_req")[1].tolist())
        counts = dropped(services)
        # The made-up series beyond the first 1022 (running_req and token_usage came first), then the
        # last two lines' token, gen_throughput and queue_req: new series too, past the cap.
        assert counts["samples"] == 30 * 60 - (MAX_SERIES - 2) + 2 * 3
    finally:
        services.stop()


def test_exports_are_streamed_and_read_back_whole(tmp_path: Path) -> None:
    services = collect(tmp_path, "".join(decode_line(n) for n in range(1, 401)), until=400)
    try:
        app = create_app(services, manage_collectors=False)
        with TestClient(app) as client:
            with client.stream("GET", "/api/export", params={"host": "local"}) as answer:
                assert answer.status_code == 200 and "content-length" not in answer.headers
                csv = b"".join(answer.iter_bytes())
            parquet = client.get("/api/export", params={"host": "local", "format": "parquet"}).content
        from_csv = pd.read_csv(io.BytesIO(csv))
        from_parquet = pd.read_parquet(io.BytesIO(parquet))
        assert len(from_csv) == len(from_parquet) == 400 * 5
        assert from_csv["value"].tolist() == from_parquet["value"].tolist()
    finally:
        services.stop()


def test_streamed_pieces_are_the_same_file(tmp_path: Path) -> None:
    from kvwatch.app.export import encode, encode_chunks

    frame = pd.DataFrame({"time": pd.to_datetime([1, 2, 3], unit="s", utc=True), "t": [1.0, 2.0, 3.0],
                          "metric": ["a", "b", "a"], "rank": "", "value": [0.5, 1.5, 2.5]})
    assert b"".join(encode_chunks(frame, "csv", rows=2)) == encode(frame, "csv")
    pieces = list(encode_chunks(frame, "parquet", rows=2))
    assert len(pieces) == 3
    assert pd.read_parquet(io.BytesIO(b"".join(pieces))).equals(pd.read_parquet(io.BytesIO(encode(frame, "parquet"))))
