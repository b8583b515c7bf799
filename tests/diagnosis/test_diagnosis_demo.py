"""`kvwatch demo --speed 4` end to end: its live 0.88 run (the last of the story: default, 0.88, fp8,
0.88 again) is kv_bound, its fp8 run client_bound, and
from the 0.88 run predict gives 0.85 -> the measured 116K and 0.93 -> out of memory; `kvwatch
diagnose` prints the verdict. Everything through HTTP, as a user sees it."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.ecosystem.processes import kvwatch_processes, wait_for

SPEED = "4"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def get(url: str) -> Any:
    return httpx.get(url, timeout=30).json()


@pytest.mark.timeout(600)
def test_the_demo_diagnosed_and_predicted_over_http(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with kvwatch_processes(tmp_path) as start:
        demo = start("demo", ["demo", "--port", str(port), "--no-browser", "--speed", SPEED,
                              "--workdir", str(tmp_path / "world")])

        def saturated() -> object:
            try:
                body = get(f"{base}/api/hosts/demo/diagnosis")
            except (httpx.HTTPError, ValueError):
                return False
            facts = {e["metric"]: e["value"] for e in body.get("evidence", [])}
            if len(get(f"{base}/api/runs?host=demo")) < 4:  # the story's last run: 0.88 after the veto
                return False
            return (body.get("verdict") == "kv_bound" and facts.get("token_usage", 0) >= 0.95
                    and facts.get("queue_req", 0) > 30)

        wait_for(saturated, 420, "the demo's 0.88 run diagnosed kv_bound: usage >= 0.95, a queue", [demo])
        runs = get(f"{base}/api/runs?host=demo")
        assert [r["flags"].get("kv-cache-dtype") for r in runs] == ["auto", "auto", "fp8_e4m3", "auto"]
        fp8 = get(f"{base}/api/hosts/demo/diagnosis?run={runs[2]['id']}")
        assert fp8["verdict"] == "client_bound"
        assert {e["metric"]: e["value"] for e in fp8["evidence"]}["queue_req"] == 0

        lower = httpx.post(f"{base}/api/hosts/demo/predict", json={"flags": {"mem-fraction-static": 0.85}}).json()
        assert lower["max_total_num_tokens"] == pytest.approx(116_000, rel=0.05) and lower["risks"] == []
        higher = httpx.post(f"{base}/api/hosts/demo/predict", json={"flags": {"mem-fraction-static": 0.93}}).json()
        assert [r["kind"] for r in higher["risks"]] == ["oom"]

        done = subprocess.run([sys.executable, "-m", "kvwatch.app", "diagnose", "--host", "demo", "--url", base],
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0 and done.stdout.startswith("demo: kv_bound"), done.stderr
