"""`kvwatch compare` from log files after the fact, and from a store."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from kvwatch.app.cli import main
from kvwatch.app.compare.offline import load_log
from kvwatch.app.store.sqlite import SqliteStore
from tests.compare.synth import THREE_CONFIGS, write_log

SPECS = tuple(replace(spec, duration_s=1500.0) for spec in THREE_CONFIGS)


class Done:
    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def kvwatch(capsys: pytest.CaptureFixture[str]) -> object:
    """The `kvwatch` entry point in-process (the subprocess route is covered by tests/app/test_cli.py)."""

    def run(*args: str) -> Done:
        code = main(list(args))
        captured = capsys.readouterr()
        return Done(code, captured.out, captured.err)

    return run


def test_compare_log_files_offline(tmp_path: Path, kvwatch: Any) -> None:
    write_log(tmp_path / "before.log", SPECS[:2], seed=41)  # a restart inside one log: two runs
    write_log(tmp_path / "after.log", SPECS[2:], seed=42)
    done = kvwatch("compare", str(tmp_path / "before.log"), str(tmp_path / "after.log"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("| config | GPU KV tokens (max_total_num_tokens) | concurrent decode reqs |")
    assert lines[2].startswith("| baseline: --mem-fraction-static 0.85 | 116K |")
    assert lines[3].startswith(
        "| --mem-fraction-static 0.88 --enable-hierarchical-cache --hicache-size 48 | 159K +37% |"
    )
    assert lines[4].startswith("| --mem-fraction-static 0.9 ") and "376K +224%" in lines[4]
    as_json = kvwatch("compare", str(tmp_path / "before.log"), str(tmp_path / "after.log"), "--format", "json")
    body = json.loads(as_json.stdout)
    assert [r["host"] for r in body["runs"]] == ["before", "before", "after"]


def test_compare_from_a_store_by_run_id(tmp_path: Path, kvwatch: Any) -> None:
    write_log(tmp_path / "server.log", SPECS, seed=43)
    database = tmp_path / "kvwatch.db"
    store = SqliteStore(str(database))
    load_log(store, "gpu1", tmp_path / "server.log")
    store.close()
    listed = kvwatch("compare", "--database", str(database), "--host", "gpu1", "--list")
    assert listed.returncode == 0, listed.stderr
    ids = [line.split("\t")[0] for line in listed.stdout.splitlines()]
    assert len(ids) == 3 and "--mem-fraction-static 0.88" in listed.stdout
    out = tmp_path / "table.csv"
    done = kvwatch(
        "compare",
        "--database",
        str(database),
        "--runs",
        f"{ids[1]},{ids[2]}",
        "--baseline",
        ids[2],
        "--format",
        "csv",
        "-o",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(io.StringIO(out.read_text()))
    assert set(table.run) == {ids[1], ids[2]}
    tokens = table[table.metric == "max_total_num_tokens"].set_index("run").change_pct
    assert round(tokens[ids[1]], 1) == -57.7


def test_compare_errors_are_one_line(tmp_path: Path, kvwatch: Any) -> None:
    nothing = kvwatch("compare")
    assert nothing.returncode == 2
    assert nothing.stderr.strip() == "kvwatch: error: compare: give server log files, or --config FILE or --database DB"
    missing = kvwatch("compare", str(tmp_path / "nope.log"))
    assert missing.returncode == 2 and missing.stderr.startswith(f"kvwatch: error: {tmp_path / 'nope.log'}: cannot")
    write_log(tmp_path / "a.log", SPECS[:1], seed=1)
    unknown = kvwatch("compare", str(tmp_path / "a.log"), "--runs", "x")
    assert unknown.stderr.strip() == "kvwatch: error: --runs: unknown run 'x' (see --list)"


def test_compare_with_the_config_reads_its_store(tmp_path: Path, kvwatch: Any) -> None:
    write_log(tmp_path / "server.log", SPECS[:2], seed=44)
    store = SqliteStore(str(tmp_path / "kvwatch.db"))
    load_log(store, "gpu1", tmp_path / "server.log")
    store.close()
    (tmp_path / "kvwatch.toml").write_text(
        f'[server]\ndatabase = "{tmp_path / "kvwatch.db"}"\n\n'
        f'[[hosts]]\nname = "gpu1"\nssh = "local"\nserver_log = "{tmp_path / "server.log"}"\n'
    )
    done = kvwatch("compare", "--config", str(tmp_path / "kvwatch.toml"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[3].startswith("| --mem-fraction-static 0.88 --enable-hierarchical-cache")
