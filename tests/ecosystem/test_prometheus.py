"""The Prometheus config the compose file mounts is one Prometheus accepts."""

from __future__ import annotations

import subprocess

from tests.ecosystem.repo import REPO

PROMETHEUS_YML = REPO / "app/container/prometheus.yml"


def test_promtool_accepts_the_compose_prometheus_config(promtool: str) -> None:
    result = subprocess.run(
        [promtool, "check", "config", str(PROMETHEUS_YML)], capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr


def test_promtool_rejects_a_broken_copy(promtool: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Guards the test above against a promtool that accepts anything.
    broken = tmp_path / "prometheus.yml"
    broken.write_text(PROMETHEUS_YML.read_text().replace("scrape_interval: 15s", "scrape_interval: fifteen"))
    result = subprocess.run([promtool, "check", "config", str(broken)], capture_output=True, text=True, check=False)
    assert result.returncode != 0
