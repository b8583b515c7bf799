"""The provisioned Grafana dashboard asks only for what kvwatch's /metrics really exports, in PromQL
that Prometheus parses, and its queries return kvwatch's data from a real Prometheus scrape."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.services import Services
from kvwatch.app.store.base import Batch, Sample
from kvwatch.app.store.sqlite import SqliteStore
from tests.ecosystem.repo import REPO
from tests.fixtures.components import require_component
from tests.fixtures.web import free_port

GRAFANA = REPO / "app/container/grafana"
DASHBOARD = GRAFANA / "dashboards/kvwatch.json"
PROMQL_WORDS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset",
                          "and", "or", "unless", "inf", "nan"})
HOST_METRICS = {"token_usage": 0.97, "running_req": 57, "queue_req": 12, "gen_throughput": 1510.5,
                "input_throughput": 3200.0, "token": 153179, "completions": 4200}


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


def expressions() -> list[str]:
    exprs = [t["expr"] for panel in dashboard()["panels"] for t in panel.get("targets", [])]
    assert exprs, "the dashboard has no queries"
    return exprs


def concrete(expr: str) -> str:
    """A dashboard expression with Grafana's template variables filled in, as Prometheus receives it."""
    return expr.replace("$host", ".*")


def metric_names(expr: str) -> set[str]:
    """Metric names a PromQL expression selects (not functions, keywords, labels or numbers)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # range selectors
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)  # label lists
    names = set()
    for match in re.finditer(r"(?<![\w.])([a-zA-Z_:][\w:]*)(\s*\()?", text):
        if not match.group(2) and match.group(1).lower() not in PROMQL_WORDS:
            names.add(match.group(1))
    return names


def template_metrics() -> set[str]:
    names = set()
    for variable in dashboard()["templating"]["list"]:
        query = variable["query"]["query"] if isinstance(variable["query"], dict) else variable["query"]
        match = re.fullmatch(r"label_values\((\w+),\s*\w+\)", query)
        assert match, f"unexpected variable query {query!r}"
        names.add(match.group(1))
    return names


def seeded_services(tmp_path: Path) -> Services:
    """A real store with one host's samples, GPU included, and the app's services around it."""
    store = SqliteStore(str(tmp_path / "kvwatch.db"))
    now = time.time()
    samples = [Sample(metric, "", now - 1, float(v)) for metric, v in HOST_METRICS.items()]
    samples += [Sample("gpu_util_pct", "GPU0", now - 1, 97.0), Sample("gpu_mem_used_mib", "GPU0", now - 1, 39287.0)]
    store.commit(Batch("gpu1", "server_log", "/logs/server.log", samples=samples))
    host = HostConfig(name="gpu1", ssh="local", server_log="/logs/server.log", target_completions=88000)
    return Services(config=Config(server=ServerConfig(), hosts=(host,)), store=store)


def exported_names(tmp_path: Path, serve_app: Any) -> set[str]:
    """Every series name in kvwatch's real /metrics text (counters with their `_total`)."""
    kvwatch = serve_app(create_app(seeded_services(tmp_path)))
    text = httpx.get(f"{kvwatch.url}/metrics", timeout=10).text
    return set(re.findall(r"^# TYPE (\S+) ", text, flags=re.M)) | set(re.findall(r"^(\w+)[{ ]", text, flags=re.M))


def test_metric_name_extraction() -> None:
    # Guards the dashboard test below against an extractor that finds nothing.
    expr = 'sum by (host, source) (rate(kvwatch_source_lines_total{host=~"$host"}[5m])) / on(host) kvwatch_host_up'
    assert metric_names(expr) == {"kvwatch_source_lines_total", "kvwatch_host_up"}
    assert metric_names("time() - kvwatch_last_sample_timestamp_seconds") == {"kvwatch_last_sample_timestamp_seconds"}


def test_dashboard_references_only_exported_metrics(tmp_path: Path, serve_app: Any) -> None:
    referenced = set().union(*(metric_names(e) for e in expressions())) | template_metrics()
    exported = exported_names(tmp_path, serve_app)
    assert "kvwatch_token_usage" in referenced
    assert referenced <= exported, f"not exported by /metrics: {sorted(referenced - exported)}"


def test_dashboard_uses_the_provisioned_data_source_and_path() -> None:
    datasources = yaml.safe_load((GRAFANA / "provisioning/datasources/prometheus.yml").read_text())
    uid = datasources["datasources"][0]["uid"]
    for panel in dashboard()["panels"]:
        assert panel["datasource"]["uid"] == uid, panel["title"]
    provider = yaml.safe_load((GRAFANA / "provisioning/dashboards/kvwatch.yml").read_text())["providers"][0]
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    mount = f"./app/container/grafana/dashboards:{provider['options']['path']}:ro"
    assert mount in compose["services"]["grafana"]["volumes"]


def test_promtool_parses_every_dashboard_query(promtool: str, tmp_path: Path) -> None:
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"kvwatch:dashboard_query_{i}", "expr": concrete(e)} for i, e in enumerate(expressions())
    ]}]}
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(rules))
    done = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.promtool
def test_prometheus_scrapes_kvwatch_and_the_dashboard_queries_answer(tmp_path: Path, serve_app: Any) -> None:
    prometheus = require_component("prometheus server (Debian prometheus)", "/usr/bin/prometheus")
    kvwatch = serve_app(create_app(seeded_services(tmp_path)))
    config = yaml.safe_load((REPO / "app/container/prometheus.yml").read_text())
    config["global"]["scrape_interval"] = "1s"
    config["scrape_configs"][0]["static_configs"] = [{"targets": [f"127.0.0.1:{kvwatch.port}"]}]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    with (tmp_path / "prometheus.log").open("w") as log:
        server = subprocess.Popen(
            [prometheus, f"--config.file={tmp_path / 'prometheus.yml'}", f"--web.listen-address=127.0.0.1:{port}",
             f"--storage.tsdb.path={tmp_path / 'tsdb'}", "--log.level=warn"],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL,
        )
    try:
        api = f"http://127.0.0.1:{port}/api/v1/query"

        def query(expr: str) -> list[Any]:
            answer = httpx.get(api, params={"query": expr}, timeout=5).json()
            assert answer["status"] == "success", (expr, answer)
            result: list[Any] = answer["data"]["result"]
            return result

        # The first scrape lands after ~6 s (the target discovery's update throttle).
        deadline = time.monotonic() + 40
        while not _answers(query, 'kvwatch_token_usage{job="kvwatch"}'):
            assert server.poll() is None, (tmp_path / "prometheus.log").read_text()
            assert time.monotonic() < deadline, "Prometheus never scraped kvwatch"
            time.sleep(0.5)
        assert float(query("kvwatch_token_usage")[0]["value"][1]) == pytest.approx(0.97)
        for expr in expressions():
            query(concrete(expr))  # every panel's query evaluates without error
        assert query(concrete('kvwatch_gpu_memory_used_bytes{host=~"$host"}'))[0]["metric"]["gpu"] == "0"
    finally:
        server.terminate()
        server.wait(15)


def _answers(query: Any, expr: str) -> bool:
    try:
        return bool(query(expr))
    except (httpx.HTTPError, ValueError):  # not listening yet, or "not ready" in plain text
        return False
