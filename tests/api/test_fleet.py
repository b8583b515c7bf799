"""GET /api/fleet over a real SQLite store: the job's totals are the sums of what each host's own
status answers, and rows name each run's difference from the fleet's common config."""

from __future__ import annotations

import time
from pathlib import Path

from fastapi.testclient import TestClient

from kvwatch.app.alerts import start_alerting
from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.services import Services
from kvwatch.app.store import open_store
from kvwatch.app.store.base import Batch, EventRow, Sample


def fill(services: Services, host: str, start: float, tps: float, done: int, mem: float) -> None:
    args = {"mem_fraction_static": mem, "model_path": "/m"}
    events = [EventRow("server_args", start, 1, {"args": args, "ts": ""})]
    samples = [Sample(metric, "", start + 5 + i, value) for i in range(30)
               for metric, value in (("gen_throughput", tps + i), ("token_usage", 0.5), ("running_req", 40.0),
                                     ("queue_req", 0.0))]
    samples += [Sample("completions", "", start + 5 + i, float(done - 29 + i)) for i in range(30)]
    services.store.commit(Batch(host, "server_log", "/l", samples=samples, events=events))


def test_totals_are_the_sums_of_the_hosts_own_status(services: Services, client: TestClient) -> None:
    start = time.time() - 60
    fill(services, "gpu1", start, 900.0, 300, 0.85)
    fill(services, "gpu2", start, 1200.0, 500, 0.88)
    fleet = client.get("/api/fleet").json()
    statuses = {h: client.get(f"/api/hosts/{h}/status").json() for h in ("gpu1", "gpu2")}
    assert {r["host"] for r in fleet["hosts"]} == {"gpu1", "gpu2"}
    for r in fleet["hosts"]:
        for key in ("gen_throughput", "token_usage", "completions", "eta_s"):
            assert r[key] == statuses[r["host"]][key], key
    totals = fleet["totals"]
    assert totals["hosts"] == 2
    assert totals["gen_throughput"] == sum(s["gen_throughput"] for s in statuses.values()) == 929.0 + 1229.0
    assert totals["completions"] == sum(s["completions"] for s in statuses.values()) == 800.0
    assert totals["target_completions"] == 2000
    pace = sum(s["completion_pace"] for s in statuses.values())
    assert totals["eta_s"] == (2000 - 800) / pace
    diffs = {r["host"]: r["config_diff"] for r in fleet["hosts"]}
    assert diffs == {"gpu1": {}, "gpu2": {"mem-fraction-static": 0.88}}  # a tie: the first host's config is common


def test_a_row_carries_the_contract_s_names(services: Services, client: TestClient) -> None:
    fill(services, "gpu1", time.time() - 60, 900.0, 300, 0.85)
    row = next(r for r in client.get("/api/fleet").json()["hosts"] if r["host"] == "gpu1")
    contract = ("name", "group", "run", "verdict", "alerts", "gen_throughput", "token_usage", "running_req",
                "queue_req", "completions", "eta_s")
    assert [key for key in contract if key not in row] == []
    assert row["name"] == "gpu1" and row["gen_throughput"] == 929.0 and row["running_req"] == 40.0


def test_a_host_with_a_firing_alert_comes_first(services: Services, client: TestClient) -> None:
    start = time.time() - 300
    fill(services, "gpu1", start, 900.0, 300, 0.85)
    usage = [Sample("token_usage", "", start + 5 * i, 0.97) for i in range(50)]
    services.store.commit(Batch("gpu2", "server_log", "/l", samples=usage))
    services.alerts = start_alerting(services, interval=0.1)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            first = client.get("/api/fleet").json()["hosts"][0]
            if first["attention"] == "alert":
                break
            time.sleep(0.2)
    finally:
        services.stop()
    assert first["host"] == "gpu2" and first["attention_reason"] == "firing: token_usage_high", first


def test_groups_total_their_own_hosts(tmp_path: Path) -> None:
    hosts = tuple(HostConfig(name=name, ssh="local", server_log=str(tmp_path / "l.log"), group=group,
                             target_completions=1000)
                  for name, group in (("a1", "job-a"), ("b1", "job-b"), ("a2", "job-a"), ("solo", None)))
    services = Services(Config(server=ServerConfig(data_dir=str(tmp_path)), hosts=hosts),
                        open_store(str(tmp_path / "kvwatch.db")))
    start = time.time() - 60
    for index, host in enumerate(hosts):
        fill(services, host.name, start, 100.0 * (index + 1), 100 * (index + 1), 0.85)
    with TestClient(create_app(services, manage_collectors=False)) as client:
        fleet = client.get("/api/fleet").json()
    services.store.close()
    rows = {r["host"]: r for r in fleet["hosts"]}
    assert [r["group"] for r in fleet["hosts"]] == ["job-a", "job-b", "job-a", None]
    assert list(fleet["groups"]) == ["job-a", "job-b"]
    job_a = fleet["groups"]["job-a"]
    assert job_a["hosts"] == 2
    assert job_a["gen_throughput"] == rows["a1"]["gen_throughput"] + rows["a2"]["gen_throughput"]
    assert job_a["completions"] == rows["a1"]["completions"] + rows["a2"]["completions"] == 400.0
    assert fleet["groups"]["job-b"]["completions"] == 200.0
    assert fleet["totals"]["completions"] == 1000.0
