"""GET /api/hosts/{name}/diagnosis and POST /api/hosts/{name}/predict over the app, on the demo's
story stored for host "local" (its 0.88 run live), and `kvwatch diagnose` asking a served kvwatch."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kvwatch.app import cli
from kvwatch.app.main import create_app
from kvwatch.app.runs import list_runs
from tests.app.slice_helpers import start_services
from tests.diagnosis.livestory import store_live_story

BASE = "http://127.0.0.1:8765"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("live")
    services = start_services(tmp)
    store_live_story(services, tmp / "story.log")
    app = create_app(services, manage_collectors=False)
    with TestClient(app, base_url=BASE) as api:
        yield {"api": api, "app": app, "runs": list_runs(services.store, "local")}
    services.store.close()


def test_the_live_088_run_is_kv_bound(world: dict[str, Any]) -> None:
    body = world["api"].get("/api/hosts/local/diagnosis").json()
    assert body["verdict"] == "kv_bound"
    assert body["run"] == world["runs"][-1].id
    assert {e["metric"] for e in body["evidence"]} >= {"token_usage", "queue_req", "running_req"}
    assert any(s["flags"] == {"mem-fraction-static": 0.9} and "predicted" in s for s in body["suggestions"])


def test_an_earlier_run_is_diagnosed_by_its_id(world: dict[str, Any]) -> None:
    fp8 = world["runs"][0]
    body = world["api"].get("/api/hosts/local/diagnosis", params={"run": fp8.id}).json()
    assert body["verdict"] == "client_bound" and body["run"] == fp8.id


def test_unknown_host_or_run_is_404(world: dict[str, Any]) -> None:
    api = world["api"]
    assert api.get("/api/hosts/nope/diagnosis").status_code == 404
    assert api.get("/api/hosts/local/diagnosis", params={"run": "local-1"}).status_code == 404
    assert api.post("/api/hosts/nope/predict", json={"flags": {"mem-fraction-static": 0.85}}).status_code == 404


def test_predict_answers_the_contract_and_changes_nothing(world: dict[str, Any]) -> None:
    api = world["api"]
    runs_before = api.get("/api/runs", params={"host": "local"}).json()
    answer = api.post("/api/hosts/local/predict", json={"flags": {"mem-fraction-static": 0.85}})
    assert answer.status_code == 200
    body = answer.json()
    assert {"max_total_num_tokens", "running_req", "gen_throughput", "risks", "basis"} <= set(body)
    assert body["max_total_num_tokens"] == pytest.approx(116_000, rel=0.05)
    assert body["running_req"] < 72 and body["risks"] == []
    oom = api.post("/api/hosts/local/predict", json={"flags": {"mem-fraction-static": 0.93}}).json()
    assert [r["kind"] for r in oom["risks"]] == ["oom"]
    assert api.get("/api/runs", params={"host": "local"}).json() == runs_before


def test_predict_takes_sglang_flag_spellings(world: dict[str, Any]) -> None:
    body = world["api"].post("/api/hosts/local/predict",
                             json={"flags": {"--kv-cache-dtype": "fp8_e4m3", "mem_fraction": 0.9}})
    # `mem_fraction` is no flag: the schema resolves prefixes of `--` names only
    assert body.status_code == 422
    ok = world["api"].post("/api/hosts/local/predict", json={"flags": {"--kv-cache-dtype": "fp8_e4m3",
                                                                       "mem-fraction": 0.9}})
    assert ok.status_code == 200 and ok.json()["basis"]["changes"] == {"kv-cache-dtype": "fp8_e4m3",
                                                                       "mem-fraction-static": 0.9}


@pytest.mark.parametrize("flags", [{"no-such-flag": 1}, {"mem-fraction-static": "lots"},
                                   {"kv-cache-dtype": "int3"}, {"api-key": "x"}])
def test_unknown_flags_and_bad_values_are_422_with_the_schema_reason(
    world: dict[str, Any], flags: dict[str, Any],
) -> None:
    answer = world["api"].post("/api/hosts/local/predict", json={"flags": flags})
    assert answer.status_code == 422
    (error,) = answer.json()["detail"]["errors"]
    assert error["flag"] == next(iter(flags)) and error["message"]


def test_a_body_without_flags_is_422(world: dict[str, Any]) -> None:
    assert world["api"].post("/api/hosts/local/predict", json={"preset": "x"}).status_code == 422


def test_kvwatch_diagnose_asks_a_served_kvwatch(world: dict[str, Any], serve_app: Any,
                                                capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    served = serve_app(world["app"])
    assert cli.main(["diagnose", "--host", "local", "--url", served.url]) == 0
    text = capsys.readouterr().out
    assert text.startswith("local: kv_bound") and "token usage median" in text and "predicted:" in text
    monkeypatch.setenv("KVWATCH_URL", served.url)
    assert cli.main(["diagnose", "--host", "local", "--json"]) == 0
    assert '"verdict": "kv_bound"' in capsys.readouterr().out
    assert cli.main(["diagnose", "--host", "nope"]) == 2
    assert "unknown host" in capsys.readouterr().err


def test_kvwatch_diagnose_finds_the_url_in_the_config_and_says_when_nothing_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KVWATCH_URL", raising=False)
    config = tmp_path / "kvwatch.toml"
    config.write_text('[server]\nhost = "0.0.0.0"\nport = 9\n', encoding="utf-8")
    assert cli.main(["diagnose", "--host", "gpu1", "--config", str(config)]) == 1
    assert "did not answer at http://127.0.0.1:9/api/hosts/gpu1/diagnosis" in capsys.readouterr().err


def test_a_host_with_nothing_stored_is_unknown_and_predicts_nothing(tmp_path: Path) -> None:
    services = start_services(tmp_path)
    with TestClient(create_app(services, manage_collectors=False), base_url=BASE) as api:
        body = api.get("/api/hosts/local/diagnosis").json()
        assert body["verdict"] == "unknown" and body["run"] is None
        answer = api.post("/api/hosts/local/predict", json={"flags": {"mem-fraction-static": 0.85}})
        assert answer.status_code == 200
        assert answer.json()["max_total_num_tokens"] is None
        assert [r["kind"] for r in answer.json()["risks"]] == ["unknown"]
    services.store.close()
