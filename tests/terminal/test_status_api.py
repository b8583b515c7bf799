"""GET /api/hosts/{name}/status and GET /api/runs/{id}/steady over a store filled from literal log lines."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from kvwatch.app.api.host_status import defining_flags
from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.flags.schema import load_bundled
from kvwatch.app.main import create_app
from kvwatch.app.pipeline.batches import BatchBuilder
from kvwatch.app.services import Services
from kvwatch.app.store import Batch, Sample, open_store
from kvwatch.parsers import create_parser

T0 = 1_772_000_000.0  # 2026-02-25 06:13:20 UTC
ARGS = ("[{ts}] server_args=ServerArgs(model_path='/models/Kimi-K2.5', tp_size=8, mem_fraction_static=0.88, "
        "enable_hierarchical_cache=True, hicache_size=48, kv_cache_dtype='auto')\n")
READY = "[{ts}] The server is fired up and ready to roll!\n"
DECODE = ("[{ts} TP0] Decode batch, #running-req: {running}, #token: 153179, token usage: {usage}, "
          "cuda graph: True, gen throughput (token/s): {tps}, #queue-req: 79\n")


def stamp(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def server_log(decodes: int) -> list[str]:
    """A start, ready 40 s later, then one decode line every 10 s: throughput 900, 910, ... usage 0.96."""
    lines = [ARGS.format(ts=stamp(T0)), READY.format(ts=stamp(T0 + 40))]
    lines += [DECODE.format(ts=stamp(T0 + 50 + 10 * i), running=72, usage=0.96, tps=900 + 10 * i)
              for i in range(decodes)]
    return lines


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    host = HostConfig(name="gpu1", ssh="local", server_log=str(tmp_path / "server.log"),
                      client_log=str(tmp_path / "client.log"), target_completions=1000)
    config = Config(server=ServerConfig(data_dir=str(tmp_path)), hosts=(host,))
    built = Services(config=config, store=open_store(str(tmp_path / "kvwatch.db")))
    yield built
    built.store.close()


@pytest.fixture
def client(services: Services) -> Iterator[TestClient]:
    with TestClient(create_app(services, manage_collectors=False)) as test_client:
        yield test_client


def feed_server_log(services: Services, lines: list[str]) -> None:
    parser = create_parser("sglang")
    builder = BatchBuilder("gpu1")
    records = [r for n, line in enumerate(lines, 1) for r in parser.feed(n, line)]
    services.store.commit(builder.from_records("server_log", "/logs/server.log", records))


def feed_outputs(services: Services, counts: dict[str, list[tuple[float, float]]]) -> None:
    """Output files' line counts over time: {path: [(t, count), ...]}, through the host aggregate."""
    builder = BatchBuilder("gpu1")
    for path, points in counts.items():
        batch = Batch("gpu1", "outputs", path)
        builder.add_samples(batch, [Sample("completions", path, t, v) for t, v in points])
        services.store.commit(batch)


def test_status_of_a_saturated_run(client: TestClient, services: Services) -> None:
    feed_server_log(services, server_log(decodes=40))  # decodes at T0+50 .. T0+440
    feed_outputs(services, {"/p/B2/raw_responses.jsonl": [(T0 + 100, 10.0), (T0 + 400, 310.0)],
                            "/p/B6/raw_responses.jsonl": [(T0 + 420, 50.0)]})
    client_batch = BatchBuilder("gpu1").from_records(
        "client_log", "/logs/client.log", create_parser("client").feed(1, "B2:  31%|###  | 310/1000 [..]\n"))
    services.store.commit(client_batch)
    body = client.get("/api/hosts/gpu1/status").json()
    assert body["host"] == "gpu1"
    assert body["run"]["flags"]["mem-fraction-static"] == 0.88 and body["run"]["state"] == "running"
    assert body["run"]["ready_at"] == T0 + 40
    assert body["run"]["defining_flags"] == {"tp-size": 8, "mem-fraction-static": 0.88,
                                             "enable-hierarchical-cache": True, "hicache-size": 48}
    assert (body["gen_throughput"], body["token_usage"], body["running_req"], body["queue_req"]) == (
        1290.0, 0.96, 72.0, 79.0)
    assert body["sampled_at"]["gen_throughput"] == T0 + 440
    # Samples in (T0+140, T0+440]: 1000, 1010, ... 1290 (30 of them).
    assert body["gen_throughput_mean_5min"] == pytest.approx(1145.0)
    assert body["completions"] == 360.0 and body["completions_by_dataset"] == {"B2": 310.0, "B6": 50.0}
    # /api/series's completion_rate at the newest count: (360 - 310) over the 20 s since T0+400.
    assert body["completion_rate"] == pytest.approx(2.5)
    assert body["sampled_at"]["completion_rate"] == T0 + 420
    assert body["eta_s"] == pytest.approx((1000 - 360) / (350 / 320))  # the ETA's 10-min pace
    assert body["client"]["done"] == 310.0 and body["client"]["total"] == 1000.0
    assert body["verdict"] is None and body["alerts"] == []
    series = client.get("/api/series", params={"host": "gpu1", "metric": "completion_rate"}).json()
    assert series["points"][-1] == [T0 + 420, pytest.approx(body["completion_rate"])]


def test_status_of_a_host_with_nothing_stored(client: TestClient) -> None:
    body = client.get("/api/hosts/gpu1/status").json()
    assert body["run"] is None and body["gen_throughput"] is None and body["completions"] is None
    assert body["client"] is None and body["eta_s"] is None and body["sampled_at"] == {}
    assert client.get("/api/hosts/gpu9/status").status_code == 404


def test_steady_is_compares_window(client: TestClient, services: Services) -> None:
    feed_server_log(services, server_log(decodes=8))  # 80 s of a climbing throughput: too short
    run_id = client.get("/api/runs", params={"host": "gpu1"}).json()[-1]["id"]
    short = client.get(f"/api/runs/{run_id}/steady").json()
    assert short["run"] == run_id and short["host"] == "gpu1"
    assert short["status"] != "steady"
    compare = client.get("/api/compare", params={"runs": run_id}).json()["runs"][0]["steady"]
    assert {k: short[k] for k in compare} == compare
    assert client.get("/api/runs/nope/steady").status_code == 404


def test_a_long_even_run_is_steady_by_the_same_window_compare_uses(client: TestClient, services: Services) -> None:
    # Ready, then 15 min of decode lines every 2 s that only wobble: steady after a short warm-up.
    lines = [ARGS.format(ts=stamp(T0)), READY.format(ts=stamp(T0 + 40))]
    lines += [DECODE.format(ts=stamp(T0 + 50 + 2 * i), running=70 + i % 5, usage=0.95 + (i % 3) / 100,
                            tps=920 + (i * 7) % 20) for i in range(450)]
    feed_server_log(services, lines)
    run_id = client.get("/api/runs", params={"host": "gpu1"}).json()[-1]["id"]
    window = client.get(f"/api/runs/{run_id}/steady").json()
    assert window["status"] == "steady" and window["duration_s"] >= 300
    compare = client.get("/api/compare", params={"runs": run_id}).json()["runs"][0]["steady"]
    assert {k: window[k] for k in compare} == compare
    stricter = client.get(f"/api/runs/{run_id}/steady", params={"min_steady": 3600}).json()
    assert stricter["status"] == "too_short"


def test_defining_flags_are_the_ones_off_sglangs_defaults() -> None:
    schema = load_bundled("0.5.23")
    logged = {"model-path": "/m", "tp-size": 8, "mem-fraction-static": 0.88, "kv-cache-dtype": "auto",
              "enable-hierarchical-cache": True, "disable-radix-cache": False, "hicache-size": 48,
              "enable-metrics": True, "not-a-flag-of-this-version": 3, "max-running-requests": None}
    assert defining_flags(logged, schema) == {"tp-size": 8, "mem-fraction-static": 0.88,
                                              "enable-hierarchical-cache": True, "hicache-size": 48}
    assert defining_flags({"model-path": "/m", "x": 1}, None) == {"x": 1}


def test_a_young_runs_windowed_numbers_are_its_own(client: TestClient, services: Services) -> None:
    # Run A: 400 s at 900..1290 tok/s and 5 completions/s; run B (a restart) 14 s old at 500..560 tok/s
    # and 1 completion/s. Nothing of A may enter B's mean, rate or ETA pace.
    t1 = T0 + 600
    run_b = [ARGS.format(ts=stamp(t1)).replace("0.88", "0.9")]
    run_b += [DECODE.format(ts=stamp(t1 + 2 * i), running=30, usage=0.5, tps=500 + 10 * (i - 1)) for i in range(1, 8)]
    feed_server_log(services, server_log(decodes=40) + run_b)
    feed_outputs(services, {"/p/B2/raw_responses.jsonl": [(t1 - 30, 300.0), (t1 - 10, 400.0), (t1 + 4, 402.0),
                                                          (t1 + 14, 412.0)]})
    body = client.get("/api/hosts/gpu1/status").json()
    assert body["run"]["started_at"] == t1 and body["sampled_at"]["gen_throughput"] == t1 + 14
    assert body["gen_throughput_mean_5min"] == pytest.approx(530.0)  # 500, 510, ... 560: run B's alone
    assert body["gen_throughput_mean"] == body["gen_throughput_mean_5min"]
    assert body["mean_window_s"] == pytest.approx(14.0)
    assert body["completion_rate"] == pytest.approx(1.0)  # (412 - 402) / 10 s, not A's 5/s
    assert body["completion_pace"] == pytest.approx(1.0)
    assert body["eta_s"] == pytest.approx((1000 - 412) / 1.0)
    # The ETA /api/series, /api/hosts and /metrics give is at the same pace (the run's, once listed).
    series = client.get("/api/series", params={"host": "gpu1", "metric": "completions"}).json()
    assert series["eta"]["rate_per_s"] == pytest.approx(1.0) and series["eta"]["eta_s"] == pytest.approx(588.0)
    hosts = client.get("/api/hosts").json()
    assert hosts[0]["progress"]["rate_per_s"] == pytest.approx(1.0)
    assert 'kvwatch_eta_seconds{host="gpu1"} 588.0' in client.get("/metrics").text


def test_an_older_runs_mean_covers_the_full_window(client: TestClient, services: Services) -> None:
    feed_server_log(services, server_log(decodes=40))  # decodes at T0+50 .. T0+440: the run is 440 s old
    body = client.get("/api/hosts/gpu1/status").json()
    assert body["mean_window_s"] == pytest.approx(300.0)
    assert body["gen_throughput_mean"] == pytest.approx(1145.0)


def test_a_run_without_its_own_samples_has_no_mean_yet(client: TestClient, services: Services) -> None:
    feed_server_log(services, [*server_log(decodes=40), ARGS.format(ts=stamp(T0 + 600))])
    body = client.get("/api/hosts/gpu1/status").json()
    assert body["run"]["started_at"] == T0 + 600
    assert body["gen_throughput_mean"] is None and body["mean_window_s"] is None
