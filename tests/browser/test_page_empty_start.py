"""A page opened on a host with nothing stored yet (range "all", no extent to follow) keeps working
when the first samples arrive: no page error. Before, the range it noted at load was null and every
later relayout event threw in isApplied ("Cannot read properties of null"), seen on the demo."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.main import create_app
from tests.app.slice_helpers import append_lines, start_services
from tests.fixtures.web import block_outside_requests, live_wait, wait_settled

pytestmark = pytest.mark.browser


def test_the_first_samples_after_an_empty_start_raise_no_page_error(tmp_path: Path, serve_app: Any,
                                                                     page: Any) -> None:
    (tmp_path / "server.log").touch()
    services = start_services(tmp_path)
    server = serve_app(create_app(services))
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    outside = block_outside_requests(page)
    page.goto(server.url)
    wait_settled(page, timeout=30_000)
    append_lines(tmp_path / "server.log", 1, 5)
    page.wait_for_function("document.getElementById('chart-throughput').data[0].x.length >= 5", timeout=20_000)
    append_lines(tmp_path / "server.log", 6, 5)
    page.wait_for_function("document.getElementById('chart-throughput').data[0].x.length >= 10", timeout=20_000)
    live_wait(page, 2.5)  # the charts follow the shared time axis at most once a second
    assert errors == []
    assert outside == []
