"""One steady minimum a host (`[hosts.compare] min_steady`): the page's API, `kvwatch compare`,
`kvwatch report` and the window `kvwatch wait --until steady` polls all judge a run by it, and a
command reading the store without the config (`--db`, a demo's `--workdir`) by the one its kvwatch
recorded."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kvwatch.app.cli import main
from kvwatch.app.compare import DEFAULT_MIN_STEADY_S
from kvwatch.app.compare.offline import load_log
from kvwatch.app.compare.settings import stored_min_steady
from kvwatch.app.config import load_config
from kvwatch.app.main import create_app
from kvwatch.app.reload import ConfigReloader
from kvwatch.app.runner import build_services
from kvwatch.app.store.sqlite import SqliteStore
from tests.compare.synth import THREE_CONFIGS, write_log

# Two 7-minute runs (1-min warm-up): about 4 minutes steady each, short of the 5-minute default and
# over a 2-minute setting.
SPECS = tuple(replace(spec, duration_s=420.0, warmup_s=60.0) for spec in THREE_CONFIGS[:2])
TOML = """
[server]
data_dir = "{data}"
database = "kvwatch.db"

[[hosts]]
name = "gpu1"
ssh = "local"
server_log = "{log}"
{compare}
"""
SETTING = '[hosts.compare]\nmin_steady = "2m"\n'


def write_config(tmp: Path, name: str, compare: str) -> Path:
    path = tmp / name
    path.write_text(TOML.format(data=tmp, log=tmp / "server.log", compare=compare))
    return path


@pytest.fixture
def configs(tmp_path: Path) -> tuple[Path, Path]:
    """The store filled from the two runs' log; a config with the 2-minute setting and one without."""
    write_log(tmp_path / "server.log", SPECS, seed=5)
    store = SqliteStore(str(tmp_path / "kvwatch.db"))
    load_log(store, "gpu1", tmp_path / "server.log")
    store.close()
    return write_config(tmp_path, "set.toml", SETTING), write_config(tmp_path, "default.toml", "")


@pytest.fixture
def client(configs: tuple[Path, Path]) -> Iterator[TestClient]:
    """A kvwatch serving the config with the setting (it records the host's minimum in the store)."""
    services = build_services(load_config(configs[0]), collect=False, controllers=False)
    with TestClient(create_app(services, manage_collectors=False)) as test_client:
        yield test_client
    services.store.close()


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["compare", *args, "--format", "json"]) == 0
    answer: dict[str, Any] = json.loads(capsys.readouterr().out)
    return answer


def statuses(result: dict[str, Any]) -> list[str]:
    return [run["steady"]["status"] for run in result["runs"]]


def test_without_the_setting_every_consumer_uses_the_one_default(
        configs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert statuses(cli_json(capsys, "--config", str(configs[1]))) == ["too_short", "too_short"]
    assert statuses(cli_json(capsys, "--db", str(tmp_path / "kvwatch.db"))) == ["too_short", "too_short"]
    assert main(["report", "--config", str(configs[1]), "-o", str(tmp_path / "r.html")]) == 0
    assert "not enough steady data" in (tmp_path / "r.html").read_text()


def test_the_hosts_setting_changes_the_window_for_every_consumer(
        client: TestClient, configs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ids = [run["id"] for run in client.get("/api/runs", params={"host": "gpu1"}).json()]
    assert len(ids) == 2
    # What `kvwatch wait --until steady` polls, and what the page's compare table reads.
    for run_id in ids:
        window = client.get(f"/api/runs/{run_id}/steady").json()
        assert window["min_steady_s"] == 120.0 and window["status"] == "steady", window
    page = client.get("/api/compare", params={"runs": ",".join(ids)}).json()
    assert page["min_steady_s"] == 120.0 and statuses(page) == ["steady", "steady"]
    # `kvwatch compare` with the config, and reading the store alone: the same windows as the page's.
    for args in (("--config", str(configs[0])), ("--db", str(tmp_path / "kvwatch.db"))):
        result = cli_json(capsys, *args)
        assert statuses(result) == ["steady", "steady"], args
        assert [r["steady"] for r in result["runs"]] == [r["steady"] for r in page["runs"]]
        assert all(v is not None for row in result["rows"] for v in row["values"])
    # `kvwatch report`: its comparison has every number.
    for args in (("--config", str(configs[0])), ("--db", str(tmp_path / "kvwatch.db"))):
        assert main(["report", *args, "-o", str(tmp_path / "r.html")]) == 0
        page_html = (tmp_path / "r.html").read_text()
        assert "Comparison of this host's runs" in page_html and "not enough steady data" not in page_html
    # ... so `wait --until steady` (steady and every row filled) is met for each run.
    assert all(client.get(f"/api/runs/{run_id}/steady").json()["filled"] for run_id in ids)
    # `--min-steady` still overrides for one comparison.
    assert statuses(cli_json(capsys, "--config", str(configs[0]), "--min-steady", "300")) == ["too_short"] * 2


def test_a_reload_records_the_new_minimum_for_readers_of_the_store(
        configs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "kvwatch.toml"
    path.write_text(configs[1].read_text())  # no setting: the default
    services = build_services(load_config(path), collect=False, controllers=False)
    try:
        assert stored_min_steady(services.store, "gpu1") == DEFAULT_MIN_STEADY_S
        path.write_text(configs[0].read_text())  # the 2-minute setting, by SIGHUP's reload
        assert ConfigReloader(services, str(path), collect=False).reload()
        assert stored_min_steady(services.store, "gpu1") == 120.0
    finally:
        services.stop()
    assert statuses(cli_json(capsys, "--db", str(tmp_path / "kvwatch.db"), "--host", "gpu1")) == ["steady", "steady"]
