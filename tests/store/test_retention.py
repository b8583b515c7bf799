"""Retention on SQLite and a real PostgreSQL: raw samples pruned in bounded batches, series by series
from their own newest sample, only for the hosts asked; rollups untouched, so /api/series still answers
a pruned window (from the 10 s buckets) and a wide one exactly as before."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.pipeline.retention import Retention
from kvwatch.app.services import Services
from kvwatch.app.store import Batch, Sample, Store

DAY = 86_400.0
T0 = 1_780_000_000.0


def put(store: Store, host: str, metric: str, t: np.ndarray, v: np.ndarray, rank: str = "") -> None:
    samples = [Sample(metric, rank, float(a), float(b)) for a, b in zip(t, v, strict=True)]
    for start in range(0, len(samples), 20_000):
        store.commit(Batch(host, "server_log", "/l", samples=samples[start:start + 20_000]))


def test_prune_series_deletes_at_most_a_batch_oldest_first(store: Store) -> None:
    t = T0 + np.arange(10_000.0)
    put(store, "gpu1", "token_usage", t, np.full(10_000, 0.5))
    put(store, "gpu1", "queue_req", t, np.zeros(10_000))
    assert store.prune_series("gpu1", "token_usage", "", T0 + 7_000, 3_000) == 3_000
    assert store.raw_start("gpu1", "token_usage") == T0 + 3_000
    assert store.prune_series("gpu1", "token_usage", "", T0 + 7_000, 3_000) == 3_000
    assert store.prune_series("gpu1", "token_usage", "", T0 + 7_000, 3_000) == 1_000  # the rest below the edge
    assert store.prune_series("gpu1", "token_usage", "", T0 + 7_000, 3_000) == 0
    left, _ = store.series("gpu1", "token_usage")
    assert left.tolist() == (T0 + np.arange(7_000.0, 10_000.0)).tolist()
    assert len(store.series("gpu1", "queue_req")[0]) == 10_000  # another series is not touched


def test_tied_timestamps_never_stall_a_batch(store: Store) -> None:
    # Eight GPUs sampled in one nvidia-smi tick share a time; more ties than a batch must still go.
    t = np.repeat(T0 + np.arange(10.0), 50)
    put(store, "gpu1", "gpu_util_pct", t, np.arange(500.0))
    assert store.prune_series("gpu1", "gpu_util_pct", "", T0 + 5, 20) == 50  # the whole first tick
    assert store.prune(T0 + 5, batch=20) == 200  # the other four ticks, a tick a batch
    assert store.raw_start("gpu1", "gpu_util_pct") == T0 + 5


def test_retention_keeps_each_series_newest_days_and_only_for_its_hosts(store: Store) -> None:
    t = T0 + np.arange(0.0, 3 * DAY, 10.0)
    for host in ("gpu1", "gpu2"):
        put(store, host, "token_usage", t, np.sin(t / 3600.0))
    # A series that stopped a day earlier keeps ITS newest day: retention counts from its own end.
    stopped = t[t < T0 + 2 * DAY]
    put(store, "gpu1", "running_req", stopped, np.ones(len(stopped)))
    retention = Retention(store, lambda: ["gpu1"], keep_s=DAY, batch=1_000, pause_s=0)
    deleted = retention.prune_once()
    newest = float(t[-1])
    assert store.raw_start("gpu1", "token_usage") == pytest.approx(newest - DAY, abs=10)
    assert store.raw_start("gpu1", "running_req") == float(stopped[-1]) - DAY
    assert store.raw_start("gpu2", "token_usage") == T0  # not this process's host
    expected = int((t < newest - DAY).sum()) + int((stopped < stopped[-1] - DAY).sum())
    assert deleted == expected and retention.pruned == expected and retention.passes == 1
    assert retention.prune_once() == 0  # nothing new to prune
    assert store.extent("gpu1", "token_usage") == (T0, newest)  # the rollups still reach the start


def test_one_sample_stamped_in_the_future_never_prunes_the_live_series(store: Store) -> None:
    now = T0 + 3 * DAY
    t = now - np.arange(0.0, 0.5 * DAY, 10.0)[::-1]  # the last half day, at 0.1 Hz, all within retention
    put(store, "gpu1", "token_usage", t, np.full(len(t), 0.9))
    put(store, "gpu1", "token_usage", np.array([4_070_908_800.0]), np.array([0.97]))  # 2099-01-01
    retention = Retention(store, lambda: ["gpu1"], keep_s=DAY, pause_s=0, clock=lambda: now)
    assert retention.prune_once() == 0
    assert store.raw_start("gpu1", "token_usage") == float(t[0])


@pytest.fixture
def services(store: Store) -> Services:
    config = Config(server=ServerConfig(), hosts=(HostConfig(name="gpu1", ssh="local", server_log="/l"),))
    return Services(config=config, store=store)


def series(client: TestClient, **params: float) -> dict:  # type: ignore[type-arg]
    answer = client.get("/api/series", params={"host": "gpu1", "metric": "queue_req", **params})
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def test_api_series_answers_a_pruned_window_from_the_rollups(services: Services) -> None:
    t = T0 + np.arange(0.0, 3 * DAY, 2.0)  # three days at 0.5 Hz
    v = np.round(10 + 5 * np.sin(t / 1800.0), 3)
    spike = int(np.searchsorted(t, T0 + 0.5 * DAY + 1234))
    v[spike] = 99.0  # in the pruned part: the 10 s bucket must keep it at its real time
    put(services.store, "gpu1", "queue_req", t, v)
    with TestClient(create_app(services, manage_collectors=False)) as client:
        wide_before = series(client, max_points=500)
        Retention(services.store, lambda: ["gpu1"], keep_s=DAY, pause_s=0).prune_once()
        assert series(client, max_points=500) == wide_before  # wide windows read rollups anyway
        hour = series(client, since=T0 + 0.5 * DAY, until=T0 + 0.5 * DAY + 3600)  # all pruned
        assert hour["resolution_s"] == 10
        assert [float(t[spike]), 99.0] in hour["points"]
        assert 360 <= len(hour["points"]) <= 720  # a 10 s bucket's min and max
        raw_pairs = dict(zip(t.tolist(), v.tolist(), strict=True))
        assert all(raw_pairs[p[0]] == p[1] for p in hour["points"])  # each point a real sample
        edge = T0 + 2 * DAY - 2
        across = series(client, since=edge - 600, until=edge + 600, max_points=2000)
        assert services.store.raw_start("gpu1", "queue_req") == edge
        times = [p[0] for p in across["points"]]
        assert across["resolution_s"] == 10 and times == sorted(times)
        assert times[-301:] == (edge + np.arange(0.0, 601.0, 2.0)).tolist()  # raw from the edge on
        assert 60 <= len(times[:-301]) <= 120 and times[-302] < edge  # 10 s buckets before it
        recent = series(client, since=T0 + 2.5 * DAY, until=T0 + 2.5 * DAY + 600)
        assert recent["resolution_s"] is None and len(recent["points"]) == 300  # raw, untouched


def test_extent_starts_at_the_first_sample_whatever_the_values_do(store: Store) -> None:
    # Falling values: a bucket's minimum is its LAST sample. The rollup fallback once took its time
    # for the series' start (1099 here instead of 1000).
    put(store, "gpu1", "token_usage", 1000.0 + np.arange(100.0), 100.0 - np.arange(100.0))
    assert store.extent("gpu1", "token_usage") == (1000.0, 1099.0)
    store.prune_series("gpu1", "token_usage", "", 1050.0)
    assert store.extent("gpu1", "token_usage") == (1000.0, 1099.0)  # the 10 s bucket's max is its first
