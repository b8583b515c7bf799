"""Three local hosts whose server logs ran some of the story's three configs (synthesized), served."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

from kvwatch.app.config import parse_config
from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from tests.app.slice_helpers import wait_until
from tests.compare.synth import THREE_CONFIGS, write_log

SPECS = tuple(replace(spec, duration_s=1200.0) for spec in THREE_CONFIGS)
ORDERS = {"node-a": (0, 1, 2), "node-b": (2, 1), "node-c": (0,)}  # which of the three configs each host ran


def serve_fleet(tmp_path: Path, serve_app: Any) -> Any:
    """The three hosts' logs collected and served; returns once every run is listed."""
    hosts = []
    for name, order in ORDERS.items():
        log = tmp_path / f"{name}.log"
        write_log(log, tuple(SPECS[i] for i in order), seed=len(hosts) + 3)
        hosts.append({"name": name, "ssh": "local", "server_log": str(log)})
    services = build_services(parse_config({"server": {"data_dir": str(tmp_path)}, "hosts": hosts}))
    for collector in services.collectors.values():
        collector.interval = 0.05
    running = serve_app(create_app(services))

    def all_runs() -> bool:
        runs = httpx.get(f"{running.url}/api/runs").json()
        return [len([r for r in runs if r["host"] == name]) for name in ORDERS] == [len(o) for o in ORDERS.values()]
    wait_until(all_runs, timeout=60)
    return running


def runs_of(url: str, host: str) -> list[dict[str, Any]]:
    return list(httpx.get(f"{url}/api/runs", params={"host": host}).json())
