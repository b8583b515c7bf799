"""What-if from the first second of a run: until the new run has measured its own workload, predict
reads it from the host's last run of the same model, and says so in its basis; before the new run has
even sized its pool, that run's startup lines stand in too. Played by the simulator's engine: the
demo's fp8 and 0.88 runs, then a 0.85 run that started seconds ago."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kvwatch.app.compare.offline import load_log
from kvwatch.app.diagnosis.inputs import same_workload
from kvwatch.app.diagnosis.predict import Workload, predict
from kvwatch.app.main import create_app
from kvwatch.app.runs import Run, list_runs
from kvwatch.app.store.sqlite import SqliteStore
from kvwatch.simulator import startup
from kvwatch.simulator.clock import SimClock
from kvwatch.simulator.logwriter import LogWriter
from kvwatch.simulator.spec import ServerSpec
from tests.app.slice_helpers import start_services
from tests.compare.simplay import STORY_SPECS, play
from tests.diagnosis.test_diagnosis_predict import inputs

BASE = "http://127.0.0.1:8765"
RUN_S = 600.0
GAP_S = 60.0
BOOT_S = 40.0  # the simulated server's weights, CUDA graphs and ready line before `play`'s run_s


def _start(path: Path, spec: ServerSpec, epoch: float, ready: bool) -> None:
    """A new run's first lines: its args and weights, then (`ready`) its capacity and ready lines."""
    with path.open("a", encoding="utf-8") as out:
        log = LogWriter(out, spec.fmt, SimClock(speed=1.0, wall_start=epoch), tp_size=spec.tp_size, pace=False)
        if ready:
            startup.write_ready(log, spec, startup.write_capacity(log, spec, startup.write_boot(log, spec)), 4343)
        else:
            startup.write_boot(log, spec, load_s=2.0)


def write_story_with_new_run(path: Path, ready: bool) -> None:
    """The fp8 and 0.88 runs, then a 0.85 run whose last line is a few seconds old."""
    new_run_s = 45.0 if ready else 8.0
    start = time.time() - 2 * (BOOT_S + RUN_S + GAP_S) - new_run_s
    with path.open("w", encoding="utf-8") as out:
        fp8 = play(STORY_SPECS[2], out, start, RUN_S, seed=5)
        saturating = play(STORY_SPECS[1], out, fp8.end_epoch + GAP_S, RUN_S, seed=15)
    _start(path, STORY_SPECS[0], saturating.end_epoch + GAP_S, ready)


def _world(tmp: Path, ready: bool) -> Iterator[dict[str, Any]]:
    services = start_services(tmp)
    path = tmp / "story.log"
    write_story_with_new_run(path, ready)
    assert isinstance(services.store, SqliteStore)
    load_log(services.store, "local", path)
    with TestClient(create_app(services, manage_collectors=False), base_url=BASE) as api:
        yield {"api": api, "runs": list_runs(services.store, "local")}
    services.store.close()


@pytest.fixture(scope="module")
def just_ready(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    yield from _world(tmp_path_factory.mktemp("ready"), ready=True)


@pytest.fixture(scope="module")
def just_started(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    yield from _world(tmp_path_factory.mktemp("started"), ready=False)


def test_a_run_ready_seconds_ago_is_predicted_from_the_last_run_of_the_same_model(
    just_ready: dict[str, Any],
) -> None:
    runs = just_ready["runs"]
    assert len(runs) == 3 and runs[-1].ready_at is not None
    assert 0 < time.time() - runs[-1].ready_at < 30  # no measurement window of its own: warm-up is 60 s
    body = just_ready["api"].post("/api/hosts/local/predict", json={"flags": {"mem-fraction-static": 0.88}}).json()
    assert body["run"] == runs[-1].id
    earlier = runs[1].id  # the 0.88 run, the newest one that measured
    assert body["basis"]["workload_run"] == earlier
    assert f"from run {earlier}'s measurements" in body["basis"]["workload"]
    # The 0.88 run ran ~72 requests of ~2,100 tokens at 0.88: the same flags give about that again.
    assert body["running_req"] == pytest.approx(72, rel=0.15)
    assert body["gen_throughput"] is not None and body["gen_throughput"] > 0
    assert not [r for r in body["risks"] if r["kind"] == "unknown"]


def test_a_run_that_has_not_sized_its_pool_takes_the_earlier_runs_startup(just_started: dict[str, Any]) -> None:
    runs = just_started["runs"]
    assert len(runs) == 3 and not runs[-1].capacity.get("max_total_num_tokens")
    body = just_started["api"].post("/api/hosts/local/predict", json={"flags": {}}).json()
    earlier = runs[1].id
    assert body["basis"]["workload_run"] == earlier and earlier in body["basis"]["startup"]
    # The new run's own 0.85 moved the 0.88 run's logged pool: the 0.85 run of the demo logs ~116K tokens.
    assert body["max_total_num_tokens"] == pytest.approx(116_000, rel=0.05)
    assert body["running_req"] is not None and body["gen_throughput"] is not None


def test_the_same_workload_is_the_same_model_and_with_none_earlier_it_is_unknown_and_why() -> None:
    run = Run("new", "local", 100.0, flags={"model-path": "/models/Kimi-K2.5"})
    assert same_workload(run, Run("old", "local", 0.0, flags={"model-path": "/models/Kimi-K2.5"}))
    assert same_workload(run, Run("unlogged", "local", 0.0))  # nothing says it differs
    assert not same_workload(run, Run("other", "local", 0.0, flags={"model-path": "/models/Llama"}))
    why = "run new was ready 3 s ago (the first 60 s are warm-up), and no earlier run ... measured one"
    out = predict(inputs(workload=Workload(None, None, None, None), unknown_workload=why), {})
    assert out.max_total_num_tokens is not None and out.running_req is None and out.gen_throughput is None
    assert {"kind": "unknown", "message": why} in out.risks
