"""The now-row's mean of a young run: its own samples only, and the label says over how long."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from tests.app.slice_helpers import wait_until
from tests.fixtures.web import open_dashboard
from tests.terminal.test_status_api import ARGS, DECODE, T0, stamp

pytestmark = pytest.mark.browser


def two_runs_log(path: Path) -> float:
    """Run A: 400 s at 900..1290 tok/s; run B (a restart 600 s later): 14 s at 500..560. B's start."""
    t1 = T0 + 600
    lines = [ARGS.format(ts=stamp(T0))]
    lines += [DECODE.format(ts=stamp(T0 + 50 + 10 * i), running=72, usage=0.96, tps=900 + 10 * i) for i in range(40)]
    lines.append(ARGS.format(ts=stamp(t1)).replace("0.88", "0.9"))
    lines += [DECODE.format(ts=stamp(t1 + 2 * i), running=30, usage=0.5, tps=500 + 10 * (i - 1)) for i in range(1, 8)]
    path.write_text("".join(lines))
    return t1


def test_a_young_runs_mean_is_its_own_and_says_how_long(tmp_path: Path, serve_app: Any, page: Any) -> None:
    two_runs_log(tmp_path / "server.log")
    host = HostConfig(name="local", ssh="local", server_log=str(tmp_path / "server.log"))
    services = build_services(Config(server=ServerConfig(data_dir=str(tmp_path), database="kvwatch.db"),
                                     hosts=(host,)))
    url = serve_app(create_app(services)).url
    wait_until(lambda: len(services.store.series("local", "gen_throughput")[0]) == 47, timeout=30)
    assert open_dashboard(page, url) == []
    mean = page.locator("[data-testid=now-row] [data-testid=now-gen-mean]")
    page.wait_for_function("document.querySelector('[data-testid=now-gen-mean] .now-value').textContent !== '—'")
    assert mean.locator(".now-value").inner_text() == "530"  # run A's 900-1290 tok/s left out
    assert mean.locator(".now-label").inner_text() == "mean over 14 s"
    status = httpx.get(f"{url}/api/hosts/local/status").json()  # what the row shows
    assert status["mean_window_s"] == pytest.approx(14.0) and status["gen_throughput_mean"] == pytest.approx(530.0)
