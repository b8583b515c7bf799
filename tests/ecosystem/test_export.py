"""`kvwatch export`: a host's stored series as CSV or Parquet, exactly the stored samples, for a run,
a window or all."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from kvwatch.app.cli import main
from kvwatch.app.runs import list_runs
from kvwatch.app.store.sqlite import SqliteStore


def stored(config: Path) -> SqliteStore:
    return SqliteStore(str(config.parent / "kvwatch.db"))


def test_csv_on_stdout_is_every_stored_sample(collected: tuple[Path, list[str]]) -> None:
    config, _ = collected
    done = subprocess.run([sys.executable, "-m", "kvwatch.app", "export", "--config", str(config)],
                          capture_output=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    frame = pd.read_csv(io.BytesIO(done.stdout))
    assert list(frame.columns) == ["time", "t", "metric", "rank", "value"]
    store = stored(config)
    try:
        for metric in store.metrics("gpu1"):
            t, v = store.series("gpu1", metric)
            mine = frame[frame["metric"] == metric]
            assert mine["t"].tolist() == pytest.approx(t.tolist())
            assert mine["value"].tolist() == pytest.approx(v.tolist())
        assert len(frame) == sum(len(store.series("gpu1", m)[0]) for m in store.metrics("gpu1"))
    finally:
        store.close()
    assert done.stderr == b""  # stderr is not a terminal here: no progress drawn


def test_one_run_as_parquet(collected: tuple[Path, list[str]], tmp_path: Path) -> None:
    config, ids = collected
    out = tmp_path / "run.parquet"
    assert main(["export", "--config", str(config), "--run", ids[1], "-o", str(out)]) == 0
    frame = pd.read_parquet(out)
    store = stored(config)
    try:
        run = next(r for r in list_runs(store, "gpu1") if r.id == ids[1])
    finally:
        store.close()
    assert run.ended_at is not None and len(frame) > 1000
    assert frame["t"].min() > run.started_at and frame["t"].max() <= run.ended_at
    assert {"token_usage", "running_req", "gen_throughput"} <= set(frame["metric"])
    assert isinstance(frame["time"].dtype, pd.DatetimeTZDtype) and str(frame["time"].dtype.tz) == "UTC"


def test_one_metric_in_a_window(collected: tuple[Path, list[str]], tmp_path: Path) -> None:
    config, _ = collected
    out = tmp_path / "w.csv"
    args = ["--metric", "token_usage", "--since", "2026-02-24T12:10:00", "--until", "2026-02-24T12:20:00"]
    assert main(["export", "--config", str(config), *args, "-o", str(out)]) == 0
    frame = pd.read_csv(out)
    assert set(frame["metric"]) == {"token_usage"}
    start = pd.Timestamp("2026-02-24T12:10:00", tz="UTC").timestamp()
    assert frame["t"].min() > start and frame["t"].max() <= start + 600 and 300 < len(frame) < 700


def test_parquet_needs_a_file(collected: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    config, _ = collected
    assert main(["export", "--config", str(config), "--format", "parquet"]) == 2
    message = "kvwatch: error: --format parquet: give a file with -o (Parquet is binary)"
    assert capsys.readouterr().err.strip() == message
