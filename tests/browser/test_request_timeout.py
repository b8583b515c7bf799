"""A request that never answers does not hold one of the browser's six connections to the origin for
good: api.js gives every request 30 s. Five such requests (a stuck helper, a server under load) would
leave every later fetch of a long-open tab queued while the live stream kept its charts moving."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from tests.browser.world import ScriptedRun
from tests.fixtures.web import block_outside_requests, wait_settled

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]


@pytest.fixture
def served(tmp_path: Path, serve_app: Any) -> str:
    run = ScriptedRun(tmp_path)
    return str(serve_app(create_app(build_services(run.config()))).url)


def test_a_request_that_never_answers_is_given_up_after_30_s(served: str, page: Any) -> None:
    block_outside_requests(page)
    hung: list[Any] = []
    failed: list[tuple[str, float]] = []
    page.route("**/api/hosts/*/diagnosis", lambda route: hung.append((route, time.monotonic())))
    page.on("requestfailed", lambda r: failed.append((r.url, time.monotonic())) if "/diagnosis" in r.url else None)
    page.goto(served)
    wait_settled(page, timeout=30_000)
    deadline = time.monotonic() + 60
    while not failed and time.monotonic() < deadline:
        page.wait_for_timeout(500)
    assert hung and failed, "the hung request was never given up"
    waited = failed[0][1] - hung[0][1]
    assert 25 <= waited <= 40, waited
