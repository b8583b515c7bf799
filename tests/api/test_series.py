"""GET /api/series: windows, ranks, runs, rollups for wide windows, derived completion rate and ETA."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

from kvwatch.app.services import Services
from kvwatch.app.store import Batch, Sample

DAY = 86_400.0


def put(services: Services, metric: str, t: np.ndarray, v: np.ndarray, rank: str = "", host: str = "gpu1") -> None:
    samples = [Sample(metric, rank, float(a), float(b)) for a, b in zip(t, v, strict=True)]
    services.store.commit(Batch(host, "server_log", "/l", samples=samples))


def test_small_series_comes_back_whole_and_windowed(client: TestClient, services: Services) -> None:
    put(services, "token_usage", np.arange(100.0), np.linspace(0, 0.99, 100))
    body = client.get("/api/series", params={"host": "gpu1", "metric": "token_usage"}).json()
    assert body["host"] == "gpu1"
    assert body["metric"] == "token_usage"
    assert len(body["points"]) == 100
    assert body["resolution_s"] is None
    window = client.get("/api/series", params={"host": "gpu1", "metric": "token_usage", "since": 10,
                                               "until": 20}).json()
    assert [p[0] for p in window["points"]] == list(range(11, 21))


def test_max_points_caps_and_keeps_extremes(client: TestClient, services: Services) -> None:
    rng = np.random.default_rng(1)
    values = rng.normal(size=5000).cumsum()
    put(services, "gen_throughput", np.arange(5000.0), values)
    points = client.get("/api/series", params={"host": "gpu1", "metric": "gen_throughput",
                                               "max_points": 300}).json()["points"]
    assert len(points) <= 300
    got = [v for _, v in points]
    assert max(got) == values.max()
    assert min(got) == values.min()


def test_wide_window_reads_rollups_with_true_extremes(client: TestClient, services: Services) -> None:
    t = np.arange(0.0, 3 * DAY, 5.0)  # three days at one sample every 5 s: 51,840 samples
    v = np.sin(t / 3600.0)
    v[20_000] = 7.5  # one spike must survive both the rollup and the downsampling
    put(services, "queue_req", t, v)
    body = client.get("/api/series", params={"host": "gpu1", "metric": "queue_req", "max_points": 200}).json()
    assert body["resolution_s"] == 600
    assert len(body["points"]) <= 200
    assert [t[20_000], 7.5] in body["points"]
    raw = client.get("/api/series", params={"host": "gpu1", "metric": "queue_req", "since": DAY,
                                            "until": DAY + 600, "max_points": 500}).json()
    assert raw["resolution_s"] is None
    assert len(raw["points"]) == 120


def test_rank_picks_one_dp_rank(client: TestClient, services: Services) -> None:
    put(services, "running_req", np.arange(3.0), np.array([1.0, 2.0, 3.0]), rank="DP3")
    put(services, "running_req", np.arange(3.0), np.array([10.0, 20.0, 30.0]))
    ranked = client.get("/api/series", params={"host": "gpu1", "metric": "running_req", "rank": "DP3"}).json()
    assert [v for _, v in ranked["points"]] == [1.0, 2.0, 3.0]
    assert ranked["rank"] == "DP3"


def test_run_limits_the_window(client: TestClient, services: Services) -> None:
    put(services, "token", np.arange(100.0), np.arange(100.0))
    services.store.put_document("run", "r7", "gpu1", 30.0, {"id": "r7", "started_at": 30.0, "ended_at": 40.0})
    body = client.get("/api/series", params={"host": "gpu1", "metric": "token", "run": "r7"}).json()
    assert [p[0] for p in body["points"]] == [float(x) for x in range(31, 41)]
    missing = client.get("/api/series", params={"host": "gpu1", "metric": "token", "run": "nope"})
    assert missing.status_code == 404
    assert "nope" in missing.json()["detail"]


def test_completion_rate_and_eta_from_completions(client: TestClient, services: Services) -> None:
    t = np.arange(0.0, 600.0, 2.0)
    put(services, "completions", t, t * 0.5)  # one completion every 2 s = 0.5/s
    body = client.get("/api/series", params={"host": "gpu1", "metric": "completion_rate", "since": 200}).json()
    assert body["points"][0][0] > 200
    assert np.allclose([v for _, v in body["points"]], 0.5)
    eta = body["eta"]
    assert eta["done"] == t[-1] * 0.5
    assert eta["target"] == 1000
    assert abs(eta["rate_per_s"] - 0.5) < 1e-9
    assert abs(eta["eta_s"] - (1000 - t[-1] * 0.5) / 0.5) < 1e-6
    hosts = client.get("/api/hosts").json()
    assert hosts[0]["progress"]["done"] == eta["done"]


def test_bad_requests_are_named(client: TestClient) -> None:
    assert client.get("/api/series", params={"host": "nope", "metric": "token"}).status_code == 404
    backwards = client.get("/api/series", params={"host": "gpu1", "metric": "token", "since": 5, "until": 1})
    assert backwards.status_code == 422
    assert client.get("/api/series", params={"host": "gpu1", "metric": "token", "max_points": 1}).status_code == 422


def test_the_completion_rate_never_reaches_back_across_a_run_start() -> None:
    from kvwatch.app.api.derived import trailing_rate

    t = np.arange(0.0, 201.0, 10.0)
    v = np.where(t <= 100, t / 10, 10 + (t - 100) / 2)  # 0.1/s, then a restart at 100 s and 0.5/s
    at, across = trailing_rate(t, v, 60.0)
    rt, within = trailing_rate(t, v, 60.0, np.asarray([0.0, 100.0]))
    assert within[rt == 120.0][0] == pytest.approx(0.5)  # (20 - 10) / 20 s: the new run's own pace
    assert across[at == 120.0][0] == pytest.approx((20 - 6) / 60)  # the old window mixed both runs
    assert within[-1] == across[-1] == pytest.approx(0.5)  # a full window inside the run: the same
