"""`kvwatch parse` end to end, through app.cli.main."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kvwatch.app.cli import main

CASES = Path(__file__).parent / "cases"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server_log(tmp_path: Path) -> Path:
    """Every SGLang golden input in one log, repeated so it spans several read blocks' worth of shapes."""
    text = "".join((case / "input.log").read_text() for case in sorted((CASES / "sglang").iterdir()))
    path = tmp_path / "server.log"
    path.write_text(text * 3)
    return path


def _jsonl(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict]:
    assert main(["parse", "-q", *args]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_jsonl_to_stdout_is_the_golden_records(capsys: pytest.CaptureFixture[str]) -> None:
    case = CASES / "sglang" / "v0_5_23_full"
    records = _jsonl(capsys, "--source", "sglang", str(case / "input.log"))
    assert records == [json.loads(line) for line in (case / "expected.jsonl").read_text().splitlines()]


def test_parquet_holds_the_same_records_as_jsonl(
    server_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = _jsonl(capsys, str(server_log))
    out = tmp_path / "out.parquet"
    assert main(["parse", "-q", "--format", "parquet", "-o", str(out), str(server_log)]) == 0
    rows = pq.read_table(out).to_pylist()
    assert len(rows) == len(expected)
    by_line: dict[tuple[int, str], list[dict]] = {}
    for record in expected:  # a line of pasted lines gives more than one record of a kind, in order
        by_line.setdefault((record["line"], record["kind"]), []).append(record)
    for row in rows:
        want = by_line[(row["line"], row["kind"])].pop(0)
        got = {key: value for key, value in row.items() if value is not None}
        for key, value in want.items():
            if value is None:  # a logged `nan` (parsers.values) is null in Parquet as in JSONL
                assert got.get(key) is None, (key, row)
            elif isinstance(value, dict) and key == "tags":
                assert {k: v for k, v in (got.get(key) or {}).items() if v is not None} == value
            elif isinstance(value, dict | list):
                assert json.loads(got[key]) == value if isinstance(got[key], str) else got[key] == value
            else:
                assert got[key] == value, (key, row)


def test_csv_has_one_header_with_every_column(
    server_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.csv"
    assert main(["parse", "-q", "--format", "csv", "-o", str(out), str(server_log)]) == 0
    with out.open() as handle:
        rows = list(csv.DictReader(handle))
    assert {"kind", "line", "ts", "tags.TP", "running_req", "gen_throughput", "input_throughput"} <= set(
        rows[0]
    )
    assert len(rows) == len(_jsonl(capsys, str(server_log)))


def test_missing_file_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.log"
    assert main(["parse", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert str(missing) in err


def test_parquet_needs_an_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "a.log"
    log.write_text("x\n")
    assert main(["parse", "--format", "parquet", str(log)]) == 2
    assert "-o" in capsys.readouterr().err


def test_invalid_utf8_and_nul_bytes_are_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "bad.log"
    log.write_bytes(
        b"\xff\xfe\x00garbage\n"
        b"[2026-01-01 00:00:00 TP0] Decode batch, #running-req: 5\xff, #token: 7\r\n\x00\n"
    )
    (record,) = _jsonl(capsys, "--source", "sglang", str(log))
    assert (record["line"], record["token"], record["running_req"]) == (2, 7, "5\ufffd")


def test_outputs_do_not_count_a_partial_last_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "raw_responses.jsonl"
    out.write_text('{"a": 1}\n{"a": 2}\n{"a": 3, "tru')
    (record,) = _jsonl(capsys, "--source", "outputs", str(out))
    assert (record["kind"], record["count"], record["file"]) == ("completions", 2, str(out))


def test_several_files_label_their_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = []
    for name in ("a.log", "b.log"):
        path = tmp_path / name
        path.write_text("[2026-01-01 00:00:00] The server is fired up and ready to roll!\n")
        paths.append(str(path))
    records = _jsonl(capsys, *paths)
    assert [record["file"] for record in records] == paths


def test_summary_goes_to_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "a.log"
    log.write_text('[2026-01-01 00:00:00] INFO:     1.2.3.4:5 - "GET / HTTP/1.1" 200 OK\n')
    assert main(["parse", str(log)]) == 0
    assert "1 lines, 0 records, 0 unparsed, 1 access" in capsys.readouterr().err


PANDAS_AFTER_PARSE = """
import sys
from kvwatch.app.cli import main
main(["parse", "-q", "--format", "parquet", "-o", sys.argv[2], sys.argv[1]])
print("pandas" in sys.modules)
import pandas as pd
import pyarrow as pa
series = pd.Series(["a", None])
print(pa.array(series).type, pa.Table.from_pandas(pd.DataFrame({"t": pd.to_datetime(["2026-01-01"])})).schema.types)
"""


def test_parse_does_not_import_pandas_and_pandas_still_converts_after(server_log: Path, tmp_path: Path) -> None:
    script = PANDAS_AFTER_PARSE
    run = [sys.executable, "-c", script, str(server_log), str(tmp_path / "out.parquet")]
    parsed = subprocess.run(run, capture_output=True, text=True, check=True, cwd=ROOT).stdout.splitlines()
    plain = [sys.executable, "-c", script.replace("main([", "([")]  # the same, without kvwatch parse first
    reference = subprocess.run([*plain, "x", "y"], capture_output=True, text=True, check=True, cwd=ROOT)
    assert parsed[0] == "False"
    assert parsed[1:] == reference.stdout.splitlines()[1:]
