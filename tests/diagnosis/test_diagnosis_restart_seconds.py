"""What-if right after a restart that followed a short run: the run before logged its KV pool but was
up too briefly to measure a workload (the demo's story, or a campaign, switching configs seconds in).
The new run's pool is predicted from that run's startup lines, moved by the flags the new run sets;
only the workload stays unknown. (A CI run of 2026-12-07 planned a campaign at that moment and got no
KV prediction for any step.)"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kvwatch.app.compare.offline import load_log
from kvwatch.app.main import create_app
from kvwatch.app.runs import list_runs
from kvwatch.app.store.sqlite import SqliteStore
from tests.app.slice_helpers import start_services
from tests.compare.simplay import STORY_SPECS
from tests.diagnosis.test_diagnosis_first_seconds import BASE, _start


@pytest.fixture(scope="module")
def restarted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("restarted")
    services = start_services(tmp)
    path = tmp / "story.log"
    path.write_text("", encoding="utf-8")
    _start(path, STORY_SPECS[0], time.time() - 80, ready=True)  # 0.85: sized, up for seconds only
    _start(path, STORY_SPECS[1], time.time() - 4, ready=False)  # 0.88: its args logged, no pool yet
    assert isinstance(services.store, SqliteStore)
    load_log(services.store, "local", path)
    with TestClient(create_app(services, manage_collectors=False), base_url=BASE) as api:
        yield {"api": api, "runs": list_runs(services.store, "local")}
    services.store.close()


def test_the_new_runs_pool_is_the_short_runs_moved_by_its_own_flags(restarted: dict[str, Any]) -> None:
    short, new = restarted["runs"]
    assert short.capacity.get("max_total_num_tokens") and not new.capacity.get("max_total_num_tokens")
    body = restarted["api"].post("/api/hosts/local/predict", json={"flags": {}}).json()
    assert body["run"] == new.id
    assert short.id in body["basis"]["startup"] and "workload_run" not in body["basis"]
    # The 0.85 run's pool (the demo's ~116K tokens) moved to 0.88: the demo's 0.88 run logs ~159K.
    assert body["max_total_num_tokens"] == pytest.approx(159_000, rel=0.05)
    unknown = [r["message"] for r in body["risks"] if r["kind"] == "unknown"]
    assert unknown and all("KV capacity" not in text for text in unknown), unknown
    assert all("measured one: running and generation need a measured workload" in text for text in unknown)
    assert body["running_req"] is None


def test_a_host_whose_only_run_has_not_sized_its_pool_is_unknown_and_says_why(tmp_path: Path) -> None:
    services = start_services(tmp_path)
    path = tmp_path / "story.log"
    path.write_text("", encoding="utf-8")
    _start(path, STORY_SPECS[1], time.time() - 4, ready=False)
    assert isinstance(services.store, SqliteStore)
    load_log(services.store, "local", path)
    try:
        with TestClient(create_app(services, manage_collectors=False), base_url=BASE) as api:
            body = api.post("/api/hosts/local/predict", json={"flags": {}}).json()
    finally:
        services.store.close()
    assert body["max_total_num_tokens"] is None
    assert any("has logged no KV capacity yet and no earlier run" in r["message"] for r in body["risks"]), body
