"""Attaching to a log that is already long, over real sshd: it is stored in bulk, exactly once, and
/api/hosts shows the catch-up's progress (bytes read of bytes there, lines a second, time left)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from kvwatch.collectors.health import SourceHealth
from tests.app.slice_helpers import wait_until
from tests.app.test_ssh_slice import ssh_config
from tests.store.test_bulk_catchup import dp_log


def test_progress_while_behind_and_when_caught_up() -> None:
    health = SourceHealth(path="/x")
    health.saw(1000, 100_000, 1000, 0)
    health.progress(100_000, 1_000_000, now=10.0)
    assert (health.bytes_read, health.bytes_total, health.catching_up) == (100_000, 1_000_000, True)
    health.saw(3000, 300_000, 3000, 0)
    health.progress(400_000, 1_000_000, now=12.0)  # 300 kB and 3000 lines in 2 s
    assert health.lines_per_s == 1500.0
    assert health.eta_s == pytest.approx(600_000 / 150_000)
    health.saw(6000, 600_000, 6000, 0)
    health.progress(1_000_000, 1_000_000, now=14.0)
    assert (health.catching_up, health.eta_s, health.bytes_read) == (False, 0.0, 1_000_000)


@pytest.mark.sshd
def test_a_long_log_is_caught_up_in_bulk_and_shows_its_progress(tmp_path: Path, sshd: Any, serve_app: Any) -> None:
    texts = dp_log(12_000)  # about 70,000 lines, 10 MB: more than one 8 MiB read
    log = tmp_path / "server.log"
    log.write_text("\n".join(texts) + "\n")
    size = log.stat().st_size
    services = build_services(ssh_config(tmp_path, sshd))
    server = serve_app(create_app(services))
    decode_dp0 = sum(1 for text in texts if "DP0 TP0] Decode" in text)
    store = services.store
    wait_until(lambda: len(store.series("gpu1", "running_req", "DP0")[0]) >= decode_dp0, timeout=120)

    def server_log() -> dict[str, Any]:
        return dict(httpx.get(f"{server.url}/api/hosts", timeout=30).json()[0]["sources"]["server_log"])

    # The source's progress is updated once the last batch is committed, not with it: on a loaded
    # machine /api/hosts can still show the first read for a moment after the rows are there.
    wait_until(lambda: server_log()["bytes_read"] == size, timeout=60)
    source = server_log()
    assert (source["bytes_read"], source["bytes_total"]) == (size, size)
    assert source["catching_up"] is False and source["eta_s"] == 0.0 and source["lines"] == len(texts)
    assert source["lines_per_s"] > 0
    assert len(store.series("gpu1", "running_req", "DP0")[0]) == decode_dp0  # exactly once
    answer = httpx.get(f"{server.url}/api/series", params={"host": "gpu1", "metric": "gen_throughput"}).json()
    assert len(answer["points"]) > 100
