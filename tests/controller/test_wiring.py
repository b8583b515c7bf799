"""The controller wired to the real SQLite store: the 202's run_id is a run of GET /api/runs' registry,
and every request leaves an audit document."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.api.restart import router
from app.config import Config, HostConfig, ServerConfig
from app.controller.wiring import RESTART_DOC, build_controllers
from app.runs.registry import list_runs
from app.store import open_store
from tests.controller.support import free_port, host_table


def test_a_restart_through_the_api_is_a_run_and_an_audit_record_in_the_store(tmp_path: Path) -> None:
    table = host_table(tmp_path, free_port())
    host = HostConfig(name="gpu1", ssh="local", server_log=table["server_log"], launch=table["launch"],
                      tables={key: table[key] for key in ("presets", "vetoes", "restart")})
    store = open_store(str(tmp_path / "kvwatch.db"))
    controllers = build_controllers(Config(server=ServerConfig(), hosts=(host,)), store)
    assert list(controllers) == ["gpu1"]
    app = FastAPI()
    app.include_router(router)
    app.state.controllers, app.state.api_token = controllers, "t0ken"
    client = TestClient(app)
    try:
        vetoed = client.post("/api/hosts/gpu1/restart", json={"preset": "fp8-hicache-090"},
                             headers={"Authorization": "Bearer t0ken"})
        assert vetoed.status_code == 403
        answer = client.post("/api/hosts/gpu1/restart", json={"preset": "bf16-hicache-088"},
                             headers={"Authorization": "Bearer t0ken"})
        assert answer.status_code == 202
        op = controllers["gpu1"].wait(120)
        assert op is not None
        assert op.outcome == "ok", op.detail
        runs = {run.id: run for run in list_runs(store, "gpu1")}
        run = runs[answer.json()["run_id"]]
        assert run.source == "controller"
        assert run.flags["mem-fraction-static"] == 0.88
        audits = [d["data"] for d in store.documents(RESTART_DOC, "gpu1")]
        assert [a["outcome"] for a in audits] == ["vetoed", "ok"]
        assert audits[1]["to_flags"]["hicache-size"] == 48
    finally:
        controllers["gpu1"].remote.stop(5)
        store.close()
