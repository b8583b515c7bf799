"""The same config's runs on different hosts, side by side: GET /api/runs/{id}/alike finds them and
GET /api/compare puts them in one table (issue #35's groups)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.compare.fleet_runs import runs_of, serve_fleet


@pytest.fixture
def fleet(tmp_path: Path, serve_app: Any) -> Any:
    return serve_fleet(tmp_path, serve_app)


def test_the_same_config_on_other_hosts_is_found_and_compared_side_by_side(fleet: Any) -> None:
    a088 = runs_of(fleet.url, "node-a")[1]
    assert a088["flags"]["mem-fraction-static"] == 0.88
    answer = httpx.get(f"{fleet.url}/api/runs/{a088['id']}/alike").json()
    assert answer["run"]["id"] == a088["id"]
    assert answer["defining_flags"]["mem-fraction-static"] == 0.88
    b088 = runs_of(fleet.url, "node-b")[1]
    assert [r["id"] for r in answer["alike"]] == [b088["id"]]  # node-c never ran 0.88
    ids = ",".join([a088["id"], b088["id"]])
    table = httpx.get(f"{fleet.url}/api/compare", params={"runs": ids}).json()
    assert [(r["id"], r["host"]) for r in table["runs"]] == [(a088["id"], "node-a"), (b088["id"], "node-b")]
    assert table["flag_diff"] == []  # one config on two hosts
    tokens = next(row for row in table["rows"] if row["metric"] == "max_total_num_tokens")
    assert tokens["values"] == [159_000, 159_000]


def test_each_config_finds_its_newest_run_on_each_other_host_and_an_unknown_run_is_404(fleet: Any) -> None:
    c085 = runs_of(fleet.url, "node-c")[0]
    a085 = runs_of(fleet.url, "node-a")[0]
    answer = httpx.get(f"{fleet.url}/api/runs/{c085['id']}/alike").json()
    assert [r["id"] for r in answer["alike"]] == [a085["id"]]
    fp8 = runs_of(fleet.url, "node-b")[0]
    assert httpx.get(f"{fleet.url}/api/runs/{fp8['id']}/alike").json()["alike"] == [runs_of(fleet.url, "node-a")[2]]
    missing = httpx.get(f"{fleet.url}/api/runs/nope-1/alike")
    assert missing.status_code == 404 and "nope-1" in missing.json()["detail"]
