"""The restart panel on the demo (simulated SGLang server, real pipeline, real controller): the
prediction of the edited flags sits beside the diff before anything is confirmed, a vetoed value is
marked in the editor and blocks the confirmation, a preset says it applies on top of the flags that
run now, and after the restart the new run's measured KV tokens are recorded next to the prediction."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kvwatch.app.commands.demo import adopt_when_settled, demo_config
from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from kvwatch.simulator.demo import start_demo_world
from tests.fixtures.web import block_outside_requests, wait_settled

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]
TOKEN = "whatif-t0ken"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
SPEED = 4.0


@pytest.fixture
def demo(tmp_path: Path, serve_app: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("KVWATCH_TOKEN", TOKEN)
    world = start_demo_world(tmp_path / "world", speed=SPEED)
    services = build_services(demo_config(world, tmp_path))
    try:
        url = serve_app(create_app(services)).url
        adopt_when_settled(world, services)  # as `kvwatch demo` does once its scripted story is over
        yield url
    finally:
        controller = services.controllers.get("demo")
        if controller is not None:
            controller.wait(60)
            controller.remote.stop(5)
        world.stop()


def number(text: str) -> float:
    return float(re.sub(r"[^0-9.]", "", text))


def before(page: Any, first: str, second: str) -> bool:
    """`first` comes before `second` in the document."""
    return bool(page.evaluate(
        "([a, b]) => Boolean(document.querySelector(a).compareDocumentPosition(document.querySelector(b))"
        " & Node.DOCUMENT_POSITION_FOLLOWING)", [first, second]))


def final_run_settled(url: str) -> bool:
    # httpx's default 5 s is too short for a demo's server on a loaded machine; the caller's deadline bounds the wait.
    run = httpx.get(f"{url}/api/hosts/demo/controller", timeout=60).json()["run"]
    if not run or run["flags"].get("enable-hierarchical-cache") is not True:
        return False
    answer = httpx.post(f"{url}/api/hosts/demo/predict", json={"flags": {}}, timeout=60).json()
    # a fresh run has measured no tokens per request yet: no concurrency to predict until it has
    return bool(answer.get("run") == run["id"] and answer.get("max_total_num_tokens") and answer.get("running_req"))


def wait_assessed(page: Any) -> None:
    page.wait_for_function("document.getElementById('ctl-prediction').dataset.state === 'done'", timeout=30_000)


def test_prediction_beside_the_diff_veto_marked_and_the_error_recorded(demo: str, page: Any) -> None:
    outside = block_outside_requests(page)
    page.set_viewport_size({"width": 1600, "height": 1100})
    page.goto(demo, timeout=90_000)  # a shared machine under load can be slow to serve the page
    wait_settled(page, timeout=30_000)
    page.wait_for_selector("[data-testid=preset-default]", timeout=30_000)
    # The demo's controller adopts its server once the story is over; the panel notices without a reload.
    page.wait_for_function("document.querySelector('#ctl-current summary').textContent"
                           ".includes('· running · run adopted-')", timeout=300_000)
    # The story's last run (0.88 + hierarchical cache) is adopted a moment before its log lines make it
    # the host's current run with its KV capacity; what-if is asked of that run, so wait for it.
    deadline = time.monotonic() + 90
    while not final_run_settled(demo):
        assert time.monotonic() < deadline, "the story's last run never became the current run"
        time.sleep(1)
    page.reload()
    page.wait_for_selector("[data-testid=preset-default]", timeout=30_000)
    based_on = httpx.get(f"{demo}/api/hosts/demo/controller", timeout=60).json()["run"]["id"]

    # A preset says what it does: laid over the flags that run now, which it keeps, named.
    page.locator("[data-testid=preset-default]").check()
    effect = page.locator("#ctl-effect").inner_text()
    assert "applies on top of the flags that run now" in effect
    assert "--mem-fraction-static 0.85" in effect and "keeps" in effect
    assert "--enable-hierarchical-cache" in effect.split("keeps", 1)[1]
    # Drop the hierarchical cache too, so the next run is the plain 0.85 config.
    page.locator("[data-testid=flag-remove-enable-hierarchical-cache]").click()
    page.locator("[data-testid=flag-remove-hicache-size]").click()
    wait_assessed(page)
    diff = page.locator("#ctl-diff").inner_text()
    assert "--mem-fraction-static 0.88 → 0.85" in diff and "--enable-hierarchical-cache" in diff
    tokens = number(page.locator("[data-testid=pred-tokens]").inner_text())
    running = number(page.locator("[data-testid=pred-running]").inner_text())
    assert 100_000 < tokens < 130_000, tokens  # 0.88 -> 0.85 shrinks the logged 159K-token pool
    assert running > 0
    assert "no risk found" in page.locator("[data-testid=pred-risks]").inner_text()
    # Beside the diff, before the confirm button, and nothing confirmed yet.
    assert before(page, "#ctl-diff", "#ctl-prediction") and before(page, "#ctl-prediction", "#ctl-review")
    assert page.locator("#ctl-prediction").is_visible() and page.locator("#ctl-confirm").is_hidden()

    # A vetoed value is marked in the editor as soon as it is chosen, and the restart cannot be confirmed.
    page.set_viewport_size({"width": 1400, "height": 1100})  # a laptop: the editor's column is ~430 px
    page.locator("#flag-search").fill("kv-cache-dtype")
    page.locator("#flag-add").click()
    page.locator("[data-testid=flag-input-kv-cache-dtype]").select_option("fp8_e4m3")
    page.wait_for_selector("tr[data-flag=kv-cache-dtype][data-problem=vetoed]", timeout=60_000)
    assert "degrades the model" in page.locator("[data-testid=flag-error-kv-cache-dtype]").inner_text()
    # The reason sits under its row, and the flag names keep their width (as a fourth column it
    # squeezed them to one letter a line).
    page.screenshot(path=str(ARTIFACTS / "controller-vetoed-flag.png"), full_page=True)
    name = page.locator("tr[data-flag=kv-cache-dtype] td").first.bounding_box()
    reason = page.locator("[data-testid=flag-error-kv-cache-dtype]").bounding_box()
    assert name is not None and reason is not None
    assert name["width"] >= 90 and reason["y"] >= name["y"] + name["height"] - 1, (name, reason)
    widths = page.evaluate("[...document.querySelectorAll('.flag-table tr[data-flag] td:first-child')]"
                           ".map((td) => Math.round(td.getBoundingClientRect().width))")
    assert len(set(widths)) == 1, widths  # one column: every row's name cell as wide
    page.set_viewport_size({"width": 1600, "height": 1100})
    assert page.locator("#ctl-review").is_disabled()
    assert "--kv-cache-dtype (vetoed)" in page.locator("#ctl-problems").inner_text()
    assert page.locator("[data-testid=pred-risks] li[data-kind=vetoed]").count() == 1
    page.locator("[data-testid=flag-remove-kv-cache-dtype]").click()
    page.wait_for_function("!document.getElementById('ctl-review').disabled", timeout=15_000)
    assert page.locator("tr[data-problem]").count() == 0

    # Confirm: the new run keeps the prediction it was made with; its startup lines give the measurement.
    page.locator("#ctl-token").fill(TOKEN)
    page.locator("#ctl-review").click()
    page.wait_for_selector("#ctl-confirm:not([hidden])")
    page.wait_for_function("!document.getElementById('ctl-go').disabled")
    page.locator("#ctl-go").click()
    page.wait_for_function("document.getElementById('ctl-progress').dataset.done === 'true'"
                           " || document.getElementById('ctl-error').textContent !== ''", timeout=120_000)
    assert page.locator("#ctl-error").inner_text() == ""
    assert page.locator("#ctl-outcome").inner_text().startswith("ok"), page.locator("#ctl-outcome").inner_text()
    page.wait_for_function(
        "(() => { const c = document.querySelector('#ctl-accuracy tr[data-row=measured] td:nth-child(3)');"
        " return c !== null && c.textContent !== 'not yet'; })()", timeout=60_000)
    kept = httpx.get(f"{demo}/api/hosts/demo/predictions", timeout=60).json()
    [record] = kept["predictions"]
    assert record["based_on"] == based_on
    assert record["predicted"]["max_total_num_tokens"] == pytest.approx(tokens, rel=0.01)
    measured = record["measured"]["max_total_num_tokens"]
    assert measured is not None and record["error"]["max_total_num_tokens"] == pytest.approx(
        (record["predicted"]["max_total_num_tokens"] - measured) / measured, abs=1e-4)
    assert abs(record["error"]["max_total_num_tokens"]) < 0.05, record
    assert kept["accuracy"]["max_total_num_tokens"]["runs"] == 1
    shown = page.locator("#ctl-accuracy tr[data-row=error] td:nth-child(3)").inner_text()
    assert shown.endswith("%"), shown
    print(f"predicted {record['predicted']} measured {record['measured']} error {record['error']}")
    assert outside == []
