"""The compare view puts the same config's runs on different hosts side by side: three hosts, the page
opened on one, a click on "same config on other hosts" (issue #35's groups)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.compare.fleet_runs import runs_of, serve_fleet
from tests.fixtures.web import open_dashboard, wait_panels

pytestmark = pytest.mark.browser
SHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"  # not committed
LOADED = "Number(document.getElementById('compare-view').dataset.loaded) >= {}"


def test_the_newest_config_of_a_host_beside_the_same_config_elsewhere(tmp_path: Path, serve_app: Any,
                                                                    page: Any) -> None:
    served = serve_fleet(tmp_path, serve_app)
    fp8_a, fp8_b = runs_of(served.url, "node-a")[2], runs_of(served.url, "node-b")[0]
    outside = open_dashboard(page, f"{served.url}/?host=node-a")
    wait_panels(page)
    page.wait_for_function(LOADED.format(1), timeout=30_000)
    assert page.locator("#cmp-table thead th").count() == 3  # node-a's last two runs: 0.88 and fp8
    across = page.locator("[data-testid=cmp-across]")
    assert across.inner_text() == "same config on other hosts"
    loaded = int(page.evaluate("document.getElementById('compare-view').dataset.loaded"))
    across.click()
    page.wait_for_function(LOADED.format(loaded + 1), timeout=30_000)
    picked = page.evaluate("[...document.querySelectorAll('#cmp-runs input:checked')].map((i) => i.value)")
    assert picked == [fp8_a["id"], fp8_b["id"]]
    assert f"node-b: {fp8_b['id']}" in page.locator("#cmp-runs").inner_text()
    kv = page.locator("#cmp-table tr[data-metric=max_total_num_tokens] td").all_inner_texts()
    assert len(kv) == 3 and kv[1].startswith("376,000") and kv[2].startswith("376,000"), kv
    assert page.locator("[data-testid=cmp-across]").get_attribute("aria-pressed") == "true"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("#compare-view").screenshot(path=str(SHOTS / "compare-across-hosts.png"))
    page.locator("[data-testid=cmp-across]").click()  # back to this host's runs
    page.wait_for_function("document.querySelector('[data-testid=cmp-across]').getAttribute('aria-pressed') === 'false'"
                           " && !document.getElementById('cmp-runs').innerText.includes('node-b:')", timeout=30_000)
    assert outside == []
