"""GET /metrics accepted by the real promtool; CSV and Parquet export read back by pandas; events."""

from __future__ import annotations

import io
import subprocess

import numpy as np
import pandas as pd
import pytest
from fastapi.testclient import TestClient

from kvwatch.app.services import Services
from kvwatch.app.store import Batch, EventRow, Sample
from tests.fixtures.components import require_component


@pytest.fixture
def filled(services: Services) -> Services:
    samples = [Sample("token_usage", "", 100.0 + i, 0.9 + i / 100) for i in range(6)]
    samples += [Sample("gen_throughput", "", 100.0 + i, 1000.0 + i) for i in range(6)]
    samples += [Sample("gpu_mem_used_mib", "GPU1", 101.0, 2.0), Sample("completions", "", 105.0, 12.0)]
    services.store.commit(Batch("gpu1", "server_log", "/l", samples=samples,
                                events=[EventRow("event", 102.0, 9, {"event": "ready"})]))
    return services


@pytest.mark.promtool
def test_metrics_pass_promtool(client: TestClient, filled: Services) -> None:
    promtool = require_component("promtool", "/usr/bin/promtool")
    response = client.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = response.text
    assert 'kvwatch_token_usage{host="gpu1"} 0.95' in text
    assert 'kvwatch_gpu_memory_used_bytes{gpu="1",host="gpu1"} 2.097152e+06' in text
    assert 'kvwatch_completions{host="gpu1"} 12.0' in text
    assert 'kvwatch_host_up{host="gpu2"} 0.0' in text
    checked = subprocess.run([promtool, "check", "metrics"], input=response.content, capture_output=True,
                             timeout=30, check=False)
    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()


def test_csv_and_parquet_export_round_trip(client: TestClient, filled: Services) -> None:
    params = {"host": "gpu1", "metric": ["token_usage", "gen_throughput"], "since": 101, "until": 104}
    csv = client.get("/api/export", params={**params, "format": "csv"})
    assert csv.headers["content-disposition"] == 'attachment; filename="gpu1.csv"'
    frame = pd.read_csv(io.StringIO(csv.text))
    assert list(frame.columns) == ["time", "t", "metric", "rank", "value"]
    assert len(frame) == 6
    assert frame[frame.metric == "gen_throughput"]["value"].tolist() == [1002.0, 1003.0, 1004.0]
    parquet = client.get("/api/export", params={**params, "format": "parquet"})
    back = pd.read_parquet(io.BytesIO(parquet.content))
    assert back["t"].tolist() == frame["t"].tolist()
    assert str(back["time"].dtype).startswith("datetime64")
    everything = pd.read_csv(io.StringIO(client.get("/api/export", params={"host": "gpu1"}).text))
    assert set(everything.metric) == {"completions", "gen_throughput", "token_usage"}


def test_export_of_a_run(client: TestClient, filled: Services) -> None:
    filled.store.put_document("run", "r1", "gpu1", 102.0, {"started_at": "1970-01-01T00:01:42", "ended_at": None})
    frame = pd.read_csv(io.StringIO(client.get("/api/export", params={"host": "gpu1", "run": "r1",
                                                                      "metric": "token_usage"}).text))
    assert np.allclose(frame["t"], [103.0, 104.0, 105.0])
    assert client.get("/api/export", params={"host": "gpu2"}).status_code == 404


def test_events_for_markers(client: TestClient, filled: Services) -> None:
    events = client.get("/api/events", params={"host": "gpu1", "kind": "event"}).json()
    assert [(e["t"], e["event"]) for e in events] == [(102.0, "ready")]
    assert client.get("/api/events", params={"host": "gpu1", "kind": "capacity"}).json() == []
