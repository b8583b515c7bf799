"""The controller wired to the real SQLite store: the 202's run_id is a run of GET /api/runs' registry,
and every request leaves an audit document; a reload swaps only the controllers whose settings changed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from kvwatch.app.api.restart import router
from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.controller.errors import Busy
from kvwatch.app.controller.swap import plan_swap
from kvwatch.app.controller.wiring import RESTART_DOC, build_controllers
from kvwatch.app.runs.registry import list_runs
from kvwatch.app.store import open_store
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


def test_a_reload_rebuilds_only_the_controllers_whose_settings_changed(tmp_path: Path) -> None:
    def host(name: str) -> HostConfig:
        table = host_table(tmp_path / name, free_port())
        return HostConfig(name=name, ssh="local", server_log=table["server_log"], launch=table["launch"],
                          tables={key: table[key] for key in ("presets", "vetoes", "restart")})

    gpu1, gpu2 = host("gpu1"), host("gpu2")
    config = Config(server=ServerConfig(), hosts=(gpu1, gpu2))
    store = open_store(str(tmp_path / "kvwatch.db"))
    try:
        live = build_controllers(config, store)
        quiet = {**gpu1.tables, "alerts": {"enabled": False}}
        alerts_only = dataclasses.replace(gpu1, client_log="/c.log", tables=quiet)
        same = plan_swap(live, config, dataclasses.replace(config, hosts=(alerts_only, gpu2)), store)
        assert (same.drop, same.put, same.old) == ([], {}, {})  # nothing the controller uses changed
        shared = dataclasses.replace(config, tables={"presets": {"calm": {"flags": {"mem-fraction-static": 0.8}}}})
        assert sorted(plan_swap(live, config, shared, store).put) == ["gpu1", "gpu2"]  # a shared preset: both
        moved = dataclasses.replace(gpu1, ssh="root@127.0.0.1:2222")
        assert list(plan_swap(live, config, dataclasses.replace(config, hosts=(moved, gpu2)), store).put) == ["gpu1"]
        restart = {**gpu1.tables["restart"], "stop_timeout": 9}
        retimed = dataclasses.replace(gpu1, tables={**gpu1.tables, "restart": restart})
        swap = plan_swap(live, config, dataclasses.replace(config, hosts=(retimed,)), store)
        assert (swap.drop, sorted(swap.put), sorted(swap.old)) == (["gpu2"], ["gpu1"], ["gpu1", "gpu2"])
        old = live["gpu1"]
        swap.hold()
        swap.apply(live)
        assert list(live) == ["gpu1"] and live["gpu1"] is not old and not live["gpu1"].busy
        assert live["gpu1"].settings.stop_timeout == 9
        with pytest.raises(Busy, match="config was just reloaded"):
            old.begin("stale", preset="bf16-hicache-088")
    finally:
        store.close()
