"""The controller wired to the real SQLite store: the 202's run_id is a run of GET /api/runs' registry,
every request leaves an audit document, a request against a run that is no longer current is refused;
a reload swaps only the controllers whose settings changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from kvwatch.app.api.errors import register_error_handlers
from kvwatch.app.api.restart import router
from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.config.alerts import AlertsTable
from kvwatch.app.config.controller import PresetTable
from kvwatch.app.controller.errors import Busy, StaleRun
from kvwatch.app.controller.restart import HostController
from kvwatch.app.controller.swap import plan_swap
from kvwatch.app.controller.wiring import RESTART_DOC, build_controllers
from kvwatch.app.runs.model import Run
from kvwatch.app.runs.registry import list_runs
from kvwatch.app.store import open_store
from kvwatch.collectors.base import CollectorError, Transport
from tests.controller.support import MemorySinks, free_port, host_table, make_config


def test_a_restart_through_the_api_is_a_run_and_an_audit_record_in_the_store(tmp_path: Path) -> None:
    table = host_table(tmp_path, free_port())
    host = HostConfig(name="gpu1", ssh="local", server_log=table["server_log"], launch=table["launch"],
                      **{key: table[key] for key in ("presets", "vetoes", "restart")})
    store = open_store(str(tmp_path / "kvwatch.db"))
    controllers = build_controllers(Config(server=ServerConfig(), hosts=(host,)), store)
    assert list(controllers) == ["gpu1"]
    app = FastAPI()
    register_error_handlers(app)  # as create_app does
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
                          **{key: table[key] for key in ("presets", "vetoes", "restart")})

    gpu1, gpu2 = host("gpu1"), host("gpu2")
    config = Config(server=ServerConfig(), hosts=(gpu1, gpu2))
    store = open_store(str(tmp_path / "kvwatch.db"))
    try:
        live = build_controllers(config, store)
        quiet = AlertsTable.model_validate({"enabled": False})
        alerts_only = gpu1.model_copy(update={"client_log": "/c.log", "alerts": quiet})
        same = plan_swap(live, config, config.model_copy(update={"hosts": (alerts_only, gpu2)}), store)
        assert (same.drop, same.put, same.old) == ([], {}, {})  # nothing the controller uses changed
        calm = PresetTable.model_validate({"flags": {"mem-fraction-static": 0.8}})
        shared = config.model_copy(update={"presets": {"calm": calm}})
        assert sorted(plan_swap(live, config, shared, store).put) == ["gpu1", "gpu2"]  # a shared preset: both
        moved = gpu1.model_copy(update={"ssh": "root@127.0.0.1:2222", "transport": "ssh"})
        assert list(plan_swap(live, config, config.model_copy(update={"hosts": (moved, gpu2)}), store).put) == ["gpu1"]
        retimed = gpu1.model_copy(update={"restart": gpu1.restart.model_copy(update={"stop_timeout": 9.0})})
        swap = plan_swap(live, config, config.model_copy(update={"hosts": (retimed,)}), store)
        assert (swap.drop, sorted(swap.put), sorted(swap.old)) == (["gpu2"], ["gpu1"], ["gpu1", "gpu2"])
        old = live["gpu1"]
        swap.hold()
        live = swap.apply(live)
        assert list(live) == ["gpu1"] and live["gpu1"] is not old and not live["gpu1"].busy
        assert live["gpu1"].settings.stop_timeout == 9
        with pytest.raises(Busy, match="config was just reloaded"):
            old.begin("stale", preset="bf16-hicache-088")
    finally:
        store.close()


def test_a_stale_expected_run_is_409_naming_the_current_run_and_nothing_runs(tmp_path: Path) -> None:
    table = host_table(tmp_path, free_port())
    host = HostConfig(name="gpu1", ssh="local", server_log=table["server_log"], launch=table["launch"],
                      **{key: table[key] for key in ("presets", "vetoes", "restart")})
    store = open_store(str(tmp_path / "kvwatch.db"))
    controllers = build_controllers(Config(server=ServerConfig(), hosts=(host,)), store)
    app = FastAPI()
    register_error_handlers(app)  # as create_app does
    app.include_router(router)
    app.state.controllers, app.state.api_token = controllers, "t0ken"
    client, auth = TestClient(app), {"Authorization": "Bearer t0ken"}
    try:
        first = client.post("/api/hosts/gpu1/restart", json={"preset": "bf16-hicache-088"}, headers=auth)
        assert first.status_code == 202, first.text
        assert controllers["gpu1"].wait(120).outcome == "ok"  # type: ignore[union-attr]
        current = first.json()["run_id"]
        view = client.get("/api/hosts/gpu1/controller").json()
        assert view["run"]["id"] == current == list_runs(store, "gpu1")[-1].id
        assert view["run"]["flags"]["mem-fraction-static"] == 0.88

        stale = client.post("/api/hosts/gpu1/restart", headers=auth,
                            json={"flags": {"mem-fraction-static": 0.85}, "expected_run": "gpu1-20200101T000000"})
        assert stale.status_code == 409
        assert stale.json()["current_run"] == current
        assert current in stale.json()["detail"]
        assert [run.id for run in list_runs(store, "gpu1")][-1] == current  # no run was started
        assert controllers["gpu1"].inspect()["run_id"] == current  # the server kvwatch started still runs
        audits = [d["data"] for d in store.documents(RESTART_DOC, "gpu1")]
        assert [a["outcome"] for a in audits] == ["ok", "stale"]
        assert audits[1]["run_id"] is None

        fresh = client.post("/api/hosts/gpu1/restart", headers=auth,
                            json={"flags": {"mem-fraction-static": 0.85}, "expected_run": current})
        assert fresh.status_code == 202, fresh.text
        assert controllers["gpu1"].wait(120).outcome == "ok"  # type: ignore[union-attr]
        assert list_runs(store, "gpu1")[-1].id == fresh.json()["run_id"] != current
    finally:
        controllers["gpu1"].remote.stop(5)
        store.close()


def test_a_stale_expected_run_never_reaches_the_host(tmp_path: Path) -> None:
    """Checked before the flags schema, the lease or anything else that would open a connection."""
    connections: list[str] = []

    def connect() -> Transport:
        connections.append("opened")
        raise CollectorError("no host in this test")

    current = Run("gpu1-20261203T160000", "gpu1", 1.0, flags={"mem-fraction-static": 0.88})
    sinks = MemorySinks()
    controller = HostController(make_config(tmp_path, free_port(), flags_schema="remote"), connect, sinks, sinks,
                                current_run=lambda: current)
    with pytest.raises(StaleRun) as refused:
        controller.begin("test", flags={"mem-fraction-static": 0.85}, expected_run="gpu1-20261203T150000")
    assert refused.value.current == current.id
    assert connections == [] and sinks.started == []
    assert [a.outcome for a in sinks.audits] == ["stale"]
    assert not controller.busy
