"""`server.retention_days` in a running kvwatch: the collecting process prunes what its collector
stored, on SQLite and on a real PostgreSQL; a web-only process prunes nothing."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from kvwatch.app.config import Config, HostConfig, ServerConfig, parse_config
from kvwatch.app.pipeline import retention
from kvwatch.app.pipeline.retention import Retention
from kvwatch.app.runner import build_services
from tests.app.slice_helpers import wait_until

DAY = 86_400.0
START = dt.datetime(2026, 2, 20, tzinfo=dt.UTC)
LINE = ("[{ts} TP0] Decode batch, #running-req: {n}, #token: 1000, token usage: 0.50, cuda graph: True, "
        "gen throughput (token/s): 900.00, #queue-req: 0\n")


def three_days_of_log(path: Path) -> int:
    """One decode line a minute for three days; returns how many."""
    stamps = [START + dt.timedelta(minutes=m) for m in range(3 * 24 * 60)]
    path.write_text("".join(LINE.format(ts=s.strftime("%Y-%m-%d %H:%M:%S"), n=i) for i, s in enumerate(stamps)))
    return len(stamps)


def config(tmp_path: Path, database: str, days: float | None) -> Config:
    host = HostConfig(name="local", ssh="local", server_log=str(tmp_path / "server.log"))
    return Config(server=ServerConfig(data_dir=str(tmp_path), database=database, retention_days=days), hosts=(host,))


def test_the_collecting_process_prunes_what_it_collected(
    tmp_path: Path, store_url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(retention, "FIRST_AFTER_S", 0.2)
    monkeypatch.setattr(retention, "EVERY_S", 0.2)
    lines = three_days_of_log(tmp_path / "server.log")
    services = build_services(config(tmp_path, store_url, 1))
    helpers = [h for h in services.background if isinstance(h, Retention)]
    assert len(helpers) == 1 and helpers[0].keep_s == DAY
    store = services.store
    newest = START.timestamp() + (lines - 1) * 60
    services.start_collectors()
    try:
        wait_until(lambda: (store.latest("local", "running_req") or (0.0, 0.0))[0] == newest, timeout=60)
        wait_until(lambda: store.raw_start("local", "running_req") == newest - DAY, timeout=30)
        t, v = store.series("local", "running_req")
        assert len(t) == 24 * 60 + 1 and v[-1] == lines - 1  # the newest day, raw
        assert store.extent("local", "running_req") == (START.timestamp(), newest)  # history in the rollups
        assert helpers[0].pruned >= 2 * 24 * 60 - 1
    finally:
        services.stop()


def test_no_retention_without_the_key_and_none_in_a_web_only_process(tmp_path: Path) -> None:
    database = str(tmp_path / "kvwatch.db")
    for built in (build_services(config(tmp_path, database, None)),
                  build_services(config(tmp_path, database, 30), collect=False)):
        assert not any(isinstance(h, Retention) for h in built.background)
        built.store.close()


def test_retention_days_takes_whole_and_fractional_days() -> None:
    assert parse_config({"server": {"retention_days": 7}}).server.retention_days == 7.0
    assert parse_config({"server": {"retention_days": 1.5}}).server.retention_days == 1.5
    assert parse_config({}).server.retention_days is None
