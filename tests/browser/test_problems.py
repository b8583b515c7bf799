"""A 404 is never swallowed by the page: a host without a controller is a state the API declares
(the panel is left out, nothing is wrong), while a 404 the page did not expect (an unknown host, a
wrong path) is listed under the header where it shows, with the server's reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from tests.browser.world import ScriptedRun
from tests.fixtures.web import block_outside_requests, open_dashboard, wait_panels, wait_settled

pytestmark = pytest.mark.browser


@pytest.fixture
def served(tmp_path: Path, serve_app: Any) -> str:
    return str(serve_app(create_app(build_services(ScriptedRun(tmp_path).config()))).url)


def test_a_host_without_a_controller_is_no_problem(served: str, page: Any) -> None:
    outside = open_dashboard(page, served)
    wait_panels(page)
    assert page.locator("#controller-panel").is_hidden()  # no `launch`: the API's 404, declared
    assert page.locator("#problems").is_hidden()
    assert page.locator("#problems li").count() == 0
    assert outside == []


def test_an_unexpected_404_is_shown(served: str, page: Any) -> None:
    outside = block_outside_requests(page)
    # Routed after the catch-all: Playwright asks the newest route first.
    unknown = json.dumps({"detail": "unknown host 'local'"})
    page.route("**/api/hosts/*/status", lambda route: route.fulfill(
        status=404, body=unknown, content_type="application/json"))
    page.route("**/api/runs?*", lambda route: route.fulfill(status=404, body="Not Found"))
    page.goto(served)
    wait_settled(page)
    problems = page.locator("#problems")
    problems.wait_for(state="visible", timeout=10_000)
    page.locator("#problems li[data-problem=status]").wait_for(timeout=10_000)
    page.locator("#problems li[data-problem=runs]").wait_for(timeout=10_000)
    status = page.locator("#problems li[data-problem=status]").inner_text()
    assert "HTTP 404" in status and "unknown host 'local'" in status, status
    assert "HTTP 404" in page.locator("#problems li[data-problem=runs]").inner_text()
    assert page.locator("#problems").get_attribute("role") == "alert"
    # The rest of the page still draws: the charts have their history.
    assert page.evaluate("document.getElementById('chart-throughput').data.length") >= 1
    assert outside == []
