"""/api/series and /api/catalog label what they show from the metric catalog; the host series come
from the pipeline's aggregation (BatchBuilder), stored and read back through the in-process app."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from kvwatch.app.pipeline.batches import BatchBuilder
from kvwatch.app.report.data import Window, gather
from kvwatch.app.services import Services
from kvwatch.app.store import Batch, Sample
from tests.catalog.grown_charts import NEW_CHART, grow_charts


def ingest(services: Services, source: str, samples: list[Sample], host: str = "gpu1") -> None:
    builder = BatchBuilder(host)
    batch = Batch(host, source, "/l")
    for sample in samples:
        builder.add_samples(batch, [sample])
    services.store.commit(batch)


def series(client: TestClient, **params: object) -> dict[str, Any]:
    response = client.get("/api/series", params={"host": "gpu1", **params})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_dp_ranks_sum_max_and_weighted_mean_with_labels(client: TestClient, services: Services) -> None:
    samples = []
    for t in (1.0, 2.0):
        for dp in range(4):
            samples += [Sample("running_req", f"DP{dp}", t, 25.0), Sample("token_usage", f"DP{dp}", t, 0.2 + 0.1 * dp),
                        Sample("accept_rate", f"DP{dp}", t, 0.70), Sample("accept_len", f"DP{dp}", t, 3.2)]
    ingest(services, "server_log", samples)
    running = series(client, metric="running_req")
    assert running["host"] == "gpu1" and running["metric"] == "running_req"
    assert running["points"][-1] == [2.0, 100.0]
    assert running["label"] == "sum over 4 DP ranks"
    assert running["combine"] == {"rule": "sum", "over": "dp", "parts": 4, "label": "sum over 4 DP ranks",
                                  "unit": "requests"}
    usage = series(client, metric="token_usage")
    assert usage["points"][-1][1] == 0.5
    assert usage["label"] == "max of 4 DP ranks"
    rate = series(client, metric="accept_rate")
    assert rate["points"][-1][1] == 0.7
    length = series(client, metric="accept_len")
    assert abs(length["points"][-1][1] - 3.2) < 1e-9
    assert length["label"] == "mean of 4 DP ranks, weighted by running requests"
    one = series(client, metric="token_usage", rank="DP3")
    assert one["points"] == [[1.0, 0.5], [2.0, 0.5]]
    assert one["label"] == "DP3 only"


def test_gpus_mean_hottest_per_gpu_and_memory_total(client: TestClient, services: Services) -> None:
    samples = []
    for gpu in range(8):
        samples += [Sample("gpu_temp_c", f"GPU{gpu}", 5.0, 60.0 + (16.0 if gpu == 7 else 0.0)),
                    Sample("gpu_util_pct", f"GPU{gpu}", 5.0, 90.0 + gpu),
                    Sample("gpu_mem_used_mib", f"GPU{gpu}", 5.0, 130_000.0)]
    ingest(services, "gpu", samples)
    temp = series(client, metric="gpu_temp_c")
    assert temp["points"][-1] == [5.0, 62.0]
    assert temp["label"] == "mean of 8 GPUs"
    hottest = series(client, metric="gpu_temp_c_max")
    assert hottest["points"][-1] == [5.0, 76.0]
    assert hottest["label"] == "max of 8 GPUs"
    util = series(client, metric="gpu_util_pct")
    assert util["points"][-1] == [5.0, 93.5]
    assert series(client, metric="gpu_util_pct", gpu=3)["points"] == [[5.0, 93.0]]
    assert series(client, metric="gpu_util_pct", gpu=3)["label"] == "GPU3 only"
    memory = series(client, metric="gpu_mem_used_mib")
    assert memory["points"][-1] == [5.0, 130_000.0] and memory["label"] == "max of 8 GPUs"
    total = series(client, metric="gpu_mem_used_mib_total")
    assert total["points"][-1] == [5.0, 1_040_000.0] and total["label"] == "total of 8 GPUs"


def test_silent_rank_leaves_the_host_series(client: TestClient, services: Services) -> None:
    samples = []
    for step in range(20):
        t = 1000.0 + 2 * step
        samples += [Sample("gen_throughput", f"DP{dp}", t, 100.0) for dp in range(3)]
        if step < 5:  # DP3 idles from t=1010 on and stops logging
            samples.append(Sample("gen_throughput", "DP3", t, 100.0))
    ingest(services, "server_log", samples)
    # each time's last host sample: the one written after every rank of that time was heard
    points = dict((t, v) for t, v in series(client, metric="gen_throughput")["points"])
    assert points[1008.0] == 400.0
    assert points[1018.0] == 400.0  # 10 s silent: the floor, still counted
    assert points[1020.0] == 300.0
    assert points[1038.0] == 300.0


def test_catalog_endpoint_serves_entries_and_host_labels(client: TestClient, services: Services) -> None:
    ingest(services, "server_log", [Sample("queue_req", f"DP{dp}", 1.0, 1.0) for dp in range(2)])
    body = client.get("/api/catalog").json()
    entries = {e["name"]: e for e in body["metrics"]}
    assert entries["gpu_temp_c"]["over_gpus"] == "mean" and entries["gpu_temp_c"]["extras"] == ["gpu_temp_c_max"]
    assert entries["accept_len"]["weight"] == "running_req"
    assert entries["token_usage"]["over_ranks"] == "max" and entries["token_usage"]["chart"] == "chart-usage"
    hosted = client.get("/api/catalog", params={"host": "gpu1"}).json()
    assert hosted["host_metrics"]["queue_req"]["label"] == "sum over 2 DP ranks"
    assert client.get("/api/catalog", params={"host": "nope"}).status_code == 404


def test_catalog_endpoint_gives_the_page_its_charts(client: TestClient) -> None:
    body = client.get("/api/catalog").json()
    assert [c["id"] for c in body["charts"]] == ["chart-throughput", "chart-usage", "chart-requests",
                                                   "chart-completions", "chart-gpu-util", "chart-gpu-mem"]
    util = body["charts"][4]
    assert util["per_gpu"] == "gpu_util_pct"
    assert [(t["metric"], t["name"], t["unit"]) for t in util["traces"]] == [
        ("gpu_util_pct", "util %", "%"), ("gpu_util_pct_max", "hottest GPU", "%")]
    assert client.get("/api/catalog", params={"host": "gpu1"}).json()["charts"] == body["charts"]


def test_a_chart_added_to_the_table_is_served(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    grow_charts(monkeypatch)
    body = client.get("/api/catalog").json()
    charts = {c["id"]: c for c in body["charts"]}
    assert list(charts)[-1] == NEW_CHART.id and charts[NEW_CHART.id]["title"] == "GPU temperature (°C)"
    assert [t["name"] for t in charts[NEW_CHART.id]["traces"]] == ["GPU temperature", "hottest GPU"]
    assert [t["name"] for t in charts["chart-requests"]["traces"]] == ["running", "queued", "swapped"]
    entries = {e["name"]: e for e in body["metrics"]}
    assert entries["swapped_req"]["chart"] == "chart-requests" and entries["gpu_temp_c"]["chart"] == NEW_CHART.id


def test_metrics_and_export_label_from_the_catalog(client: TestClient, services: Services) -> None:
    samples = [Sample("running_req", f"DP{dp}", 1.0, 10.0) for dp in range(4)]
    samples += [Sample("gpu_util_pct", f"GPU{gpu}", 1.0, 50.0) for gpu in range(8)]
    ingest(services, "server_log", samples)
    text = client.get("/metrics").text
    assert '# HELP kvwatch_running_requests running requests (requests); host value: sum over DP ranks' in text
    assert 'kvwatch_series_parts{combine="sum over 4 DP ranks",host="gpu1",metric="running_req"} 4.0' in text
    assert 'kvwatch_series_parts{combine="mean of 8 GPUs",host="gpu1",metric="gpu_util_pct"} 8.0' in text
    exported = client.get("/api/export", params={"host": "gpu1", "metric": ["running_req", "gpu_util_pct"]})
    assert exported.headers["x-kvwatch-combine"] == "running_req=sum over 4 DP ranks; gpu_util_pct=mean of 8 GPUs"


def test_completion_rate_counts_its_output_files(client: TestClient, services: Services) -> None:
    builder = BatchBuilder("gpu1")
    for path in ("/p/A/raw_responses.jsonl", "/p/B/raw_responses.jsonl"):
        batch = Batch("gpu1", "outputs", path)
        builder.add_samples(batch, [Sample("completions", path, float(t), float(t)) for t in range(0, 120, 2)])
        services.store.commit(batch)
    done = series(client, metric="completions")
    assert done["points"][-1][1] == 236.0 and done["label"] == "sum over 2 output files"
    rate = series(client, metric="completion_rate")
    assert rate["label"] == "sum over 2 output files"
    assert rate["unit"] == rate["combine"]["unit"] == "1/s"


def test_report_summary_names_what_each_host_value_combines(services: Services) -> None:
    samples = [Sample("running_req", f"DP{dp}", float(t), 10.0) for t in range(3) for dp in range(4)]
    samples += [Sample("gpu_util_pct", f"GPU{gpu}", 1.0, 50.0) for gpu in range(8)]
    ingest(services, "server_log", samples)
    summary = {row["metric"]: row for row in gather(services.store, "gpu1", Window()).summary}
    assert summary["running_req"]["combine"] == "sum over 4 DP ranks"
    assert summary["running_req"]["last"] == 40.0
    assert summary["gpu_util_pct"]["combine"] == "mean of 8 GPUs"
    assert summary["gpu_util_pct"]["last"] == 50.0
