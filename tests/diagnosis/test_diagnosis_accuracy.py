"""Predictions kept with runs, and what those runs measured: GET /api/hosts/{name}/predictions on the
demo's story stored for host "local" (an fp8 run at 0.90, then the 0.88 bf16 run), with the 0.88 run's
prediction made from the fp8 run as a restart would have made it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kvwatch.app.diagnosis.accuracy import changes_from, keep_prediction, relative_error, summary
from kvwatch.app.diagnosis.service import predict_host
from kvwatch.app.main import create_app
from kvwatch.app.runs import list_runs
from tests.app.slice_helpers import start_services
from tests.diagnosis.livestory import store_live_story

BASE = "http://127.0.0.1:8765"


def test_changes_are_new_values_and_dropped_flags() -> None:
    before = {"mem-fraction-static": 0.9, "kv-cache-dtype": "fp8_e4m3", "tp-size": 8}
    after = {"mem-fraction-static": 0.88, "tp-size": 8, "enable-hierarchical-cache": True}
    assert changes_from(before, after) == {"mem-fraction-static": 0.88, "enable-hierarchical-cache": True,
                                           "kv-cache-dtype": None}


def test_relative_error_and_its_mean() -> None:
    assert relative_error(110, 100) == pytest.approx(0.1)
    assert relative_error(90.0, 100) == pytest.approx(-0.1)
    assert relative_error(None, 100) is None and relative_error(5, None) is None and relative_error(5, 0) is None
    records = [{"error": {"max_total_num_tokens": 0.1, "running_req": None, "gen_throughput": -0.3}},
               {"error": {"max_total_num_tokens": -0.02, "running_req": None, "gen_throughput": None}}]
    mean = summary(records)
    assert mean["max_total_num_tokens"] == {"runs": 2, "mean_abs_error": pytest.approx(0.06)}
    assert mean["running_req"] == {"runs": 0, "mean_abs_error": None}
    assert mean["gen_throughput"]["runs"] == 1


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("kept")
    services = start_services(tmp)
    store_live_story(services, tmp / "story.log")
    fp8, bf16 = list_runs(services.store, "local")
    host = next(h for h in services.config.hosts if h.name == "local")
    changes = changes_from(dict(fp8.flags), {**fp8.flags, "mem-fraction-static": 0.88, "kv-cache-dtype": "auto"})
    prediction = predict_host(services.store, host, changes, run_id=fp8.id)
    keep_prediction(services.store, "local", bf16.id, bf16.started_at - 1, fp8.id, prediction)
    with TestClient(create_app(services, manage_collectors=False), base_url=BASE) as api:
        yield {"api": api, "prediction": prediction, "runs": (fp8, bf16)}
    services.store.close()


def test_the_run_keeps_its_prediction_next_to_what_it_measured(kept: dict[str, Any]) -> None:
    fp8, bf16 = kept["runs"]
    body = kept["api"].get("/api/hosts/local/predictions").json()
    [record] = body["predictions"]
    assert record["run"] == bf16.id and record["based_on"] == fp8.id
    assert record["changes"] == {"mem-fraction-static": 0.88, "kv-cache-dtype": "auto"}
    predicted, measured = record["predicted"], record["measured"]
    assert predicted["max_total_num_tokens"] == kept["prediction"]["max_total_num_tokens"]
    assert measured["max_total_num_tokens"] == bf16.capacity["max_total_num_tokens"]
    assert measured["running_req"] is not None and measured["gen_throughput"] is not None
    assert measured["steady_samples"] >= 5
    for metric in ("max_total_num_tokens", "running_req", "gen_throughput"):
        expected = (predicted[metric] - measured[metric]) / measured[metric]
        assert record["error"][metric] == pytest.approx(expected, abs=1e-4)
        assert body["accuracy"][metric]["runs"] == 1
    # fp8 at 0.90 -> bf16 at 0.88: the pool model, from the fp8 run's own startup lines, within 10 %.
    assert abs(record["error"]["max_total_num_tokens"]) < 0.10, record


def test_an_unknown_host_is_404(kept: dict[str, Any]) -> None:
    api = kept["api"]
    assert api.get("/api/hosts/nope/predictions").status_code == 404
