"""Issue #22 on the page, in Debian's Chromium against a real uvicorn and collector: the server-log card
counts lines whose stamps were quarantined (one line an hour ahead of the clock), and the client-log
card says the file is missing while it is, and stops saying so once it is there."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from tests.browser.test_panels import open_page

pytestmark = pytest.mark.browser
LINE = ("[{stamp} TP0] Decode batch, #running-req: {n}, #token: 1000, token usage: 0.50, cuda graph: True, "
        "gen throughput (token/s): 900.00, #queue-req: 0\n")


def stamp(t: float) -> str:
    return dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S")


@pytest.fixture
def served(tmp_path: Path, serve_app: Any) -> tuple[str, Path]:
    """The app's lifespan starts the collector and stops the services when serve_app stops uvicorn."""
    now = time.time()
    lines = [LINE.format(stamp=stamp(now + 3600), n=1)]
    lines += [LINE.format(stamp=stamp(now - 60 + i), n=i + 2) for i in range(30)]
    (tmp_path / "server.log").write_text("".join(lines))
    host = HostConfig(name="local", ssh="local", server_log=str(tmp_path / "server.log"),
                      client_log=str(tmp_path / "client.log"))
    services = build_services(Config(server=ServerConfig(data_dir=str(tmp_path), database="kvwatch.db"),
                                     hosts=(host,)))
    for collector in services.collectors.values():
        collector.interval = 0.1
    server = serve_app(create_app(services))
    return server.url, tmp_path


def test_the_source_cards_show_quarantined_stamps_and_a_missing_log(served: tuple[str, Path], page: Any) -> None:
    url, tmp_path = served
    outside = open_page(page, url)
    outliers = page.locator("[data-testid=source-server-log] [data-testid=stamp-outliers]")
    outliers.wait_for(timeout=30_000)
    assert outliers.inner_text() == "1 lines stamped out of range, not stored"
    assert "line 1" in (outliers.get_attribute("title") or "")
    missing = page.locator("[data-testid=source-client-log] [data-testid=source-missing]")
    missing.wait_for(timeout=30_000)
    assert missing.inner_text() == "file missing"
    (tmp_path / "client.log").write_text(" 10%|#         | 1/10 [00:01<00:09,  1.00it/s]\n")
    missing.wait_for(state="detached", timeout=30_000)
    assert page.locator("[data-testid=source-server-log] [data-testid=source-missing]").count() == 0
    assert outside == []
