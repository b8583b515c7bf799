"""The page under its Content-Security-Policy in Debian's Chromium: plotly draws, a plotly.js that does
not load is said on the page, and the browser reports no violation (a violation would mean the policy
broke something, or the page started needing inline script, eval or a CDN)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from tests.browser.world import ScriptedRun
from tests.fixtures.web import wait_settled

pytestmark = pytest.mark.browser
RECORD_VIOLATIONS = """
window.cspViolations = [];
document.addEventListener('securitypolicyviolation',
  (e) => window.cspViolations.push(`${e.violatedDirective} ${e.blockedURI} ${e.sample}`));
"""


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A page that obeys the policy (the shared fixture's pages bypass it)."""
    context = browser.new_context()
    try:
        yield context.new_page()
    finally:
        context.close()


def wait_until(page: Any, predicate: str, timeout_ms: int) -> None:
    """Playwright's string predicates run in the page with eval, which the policy allows for automation."""
    page.wait_for_function(predicate, timeout=timeout_ms)


@pytest.fixture
def served(tmp_path: Path, serve_app: Any) -> str:
    return str(serve_app(create_app(build_services(ScriptedRun(tmp_path).config()))).url)


def test_the_dashboard_draws_under_the_policy(served: str, page: Any) -> None:
    page.add_init_script(RECORD_VIOLATIONS)
    answer = page.goto(served)
    policy = answer.headers["content-security-policy"]
    assert "script-src 'self' 'unsafe-eval';" in policy and "unsafe-inline" not in policy.split("style-src")[0]
    wait_settled(page, timeout=30_000)
    drawn = page.evaluate("['chart-throughput', 'chart-usage', 'chart-requests']"
                          ".map((id) => document.getElementById(id).querySelectorAll('.main-svg').length)")
    assert min(drawn) >= 1
    page.hover("#chart-throughput .nsewdrag")  # plotly's hover layer draws with inline styles
    page.wait_for_timeout(500)
    assert page.evaluate("window.cspViolations") == []


def test_a_missing_plotly_is_reported_without_a_violation(served: str, page: Any) -> None:
    page.add_init_script(RECORD_VIOLATIONS)
    page.route("**/vendor/plotly.min.js", lambda route: route.fulfill(status=404, body="gone"))
    page.goto(served)
    wait_until(page, "document.getElementById('host-error').textContent !== ''", 15_000)
    assert "plotly.js did not load" in page.locator("#host-error").inner_text()
    assert page.evaluate("window.cspViolations") == []
