"""The controller panel and the compare view in Debian's Chromium against a real uvicorn: a real restart of
the fake SGLang server through the page, and two simulated runs compared from the real store."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from kvwatch.app.services import Services
from tests.app.slice_helpers import start_services, wait_until
from tests.compare.synth import THREE_CONFIGS, write_log
from tests.controller.support import free_port, host_table
from tests.fixtures.web import open_dashboard, wait_panels

pytestmark = pytest.mark.browser
# test artifacts, not committed: the README's screenshot is made on purpose by bench/screenshot_dashboard.py
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
TOKEN = "panel-t0ken"


def open_page(page: Any, url: str) -> list[str]:
    outside = open_dashboard(page, url)
    wait_panels(page)
    return outside


def shoot(page: Any, name: str, selector: str | None = None) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    target = page.locator(selector) if selector else page
    kwargs = {} if selector else {"full_page": True}
    target.screenshot(path=str(SCREENSHOTS / name), **kwargs)


def controlled_config(tmp_path: Path, launch_extra: str = "") -> Config:
    """One host, gpu1, whose server the controller restarts (the fake server; `launch_extra`: more flags)."""
    table = host_table(tmp_path, free_port())
    (tmp_path / "logs").mkdir()
    host = HostConfig(name="gpu1", ssh="local", server_log=table["server_log"], launch=table["launch"] + launch_extra,
                      **{key: table[key] for key in ("presets", "vetoes", "restart")})
    return Config(server=ServerConfig(data_dir=str(tmp_path), database="kvwatch.db", token=TOKEN), hosts=(host,))


@pytest.fixture
def controlled(tmp_path: Path, serve_app: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Services, str]]:
    monkeypatch.delenv("KVWATCH_TOKEN", raising=False)
    services = build_services(controlled_config(tmp_path))
    server = serve_app(create_app(services))
    yield services, server.url
    controller = services.controllers["gpu1"]
    controller.wait(60)
    controller.remote.stop(5)


def test_controller_panel_presets_veto_token_and_live_progress(controlled: tuple[Services, str], page: Any) -> None:
    services, url = controlled
    outside = open_page(page, url)
    page.wait_for_selector("[data-testid=preset-bf16-hicache-088]")
    assert page.locator("#controller-panel").is_visible()
    assert page.locator("[data-testid=preset-fp8-hicache-090]").is_disabled()
    assert "degrades the model noticeably" in page.locator("[data-testid=veto-fp8-hicache-090]").inner_text()
    assert page.locator("[data-testid=preset-bf16-hicache-088]").is_enabled()
    # The editor holds the flags of the launch line, with the real widget for each.
    assert page.locator("[data-testid=flag-input-model-path]").input_value() == "/models/Kimi-K2.5"
    page.locator("[data-testid=preset-bf16-hicache-088]").check()
    assert "159K" in page.locator("#ctl-effect").inner_text()
    diff = page.locator("#ctl-diff").inner_text()
    assert "--mem-fraction-static" in diff and "--hicache-size" in diff
    assert page.locator("[data-testid=flag-input-enable-hierarchical-cache]").get_attribute("type") == "checkbox"
    # An option with choices is a select of the real choices, found by the search box.
    page.locator("#flag-search").fill("attention-backend")
    page.locator("#flag-add").click()
    assert page.locator("[data-testid=flag-input-attention-backend] option").count() > 3
    page.locator("[data-testid=flag-remove-attention-backend]").click()
    # Wrong token: 401 with its reason, nothing runs.
    page.locator("#ctl-token").fill("wrong")
    page.locator("#ctl-review").click()
    assert "preset bf16-hicache-088" in page.locator("#ctl-confirm").inner_text()
    page.locator("#ctl-go").click()
    page.wait_for_function("document.getElementById('ctl-error').textContent.startsWith('401')")
    assert services.controllers["gpu1"].last is None
    assert page.evaluate("sessionStorage.getItem('kvwatch-token')") == "wrong"
    assert page.evaluate("localStorage.getItem('kvwatch-token')") is None
    # The right token but a value the controller refuses: marked next to the flag before confirming (the
    # restart's own checks, dry run), the restart cannot be reviewed, nothing runs.
    page.locator("#ctl-token").fill(TOKEN)
    page.locator("[data-testid=flag-input-model-path]").fill("-rf")
    page.wait_for_selector("tr[data-flag=model-path][data-problem=invalid]")
    assert "start with '-'" in page.locator("[data-testid=flag-error-model-path]").inner_text()
    assert page.locator("#ctl-review").is_disabled()
    assert services.controllers["gpu1"].last is None
    page.locator("[data-testid=flag-input-model-path]").fill("/models/Kimi-K2.5")
    page.wait_for_function("!document.getElementById('ctl-review').disabled")
    # Then progress until the operation ends "ok".
    page.locator("#ctl-review").click()
    page.locator("#ctl-go").click()
    page.wait_for_selector("#ctl-progress:not([hidden])")
    page.wait_for_function("document.getElementById('ctl-progress').dataset.done === 'true'", timeout=90_000)
    assert page.locator("#ctl-outcome").inner_text().startswith("ok"), page.locator("#ctl-outcome").inner_text()
    assert page.locator("#ctl-steps li").count() >= 3
    assert TOKEN not in page.url
    op = services.controllers["gpu1"].last
    assert op is not None and op.outcome == "ok" and op.to_flags["hicache-size"] == 48
    shoot(page, "controller.png", "#controller-panel")
    assert outside == []


@pytest.fixture
def two_runs(tmp_path: Path, serve_app: Any) -> Any:
    specs = tuple(replace(spec, duration_s=1500.0) for spec in THREE_CONFIGS[:2])
    write_log(tmp_path / "server.log", specs, seed=7)
    decode_lines = sum("Decode batch" in line for line in (tmp_path / "server.log").open())
    services = start_services(tmp_path)
    running = serve_app(create_app(services))
    wait_until(lambda: len(services.store.series("local", "gen_throughput")[0]) == decode_lines, timeout=60)
    return running


def test_compare_view_table_markdown_csv_overlay_and_window(two_runs: Any, page: Any) -> None:
    outside = open_page(page, two_runs.url)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.wait_for_function("Number(document.getElementById('compare-view').dataset.loaded) >= 1", timeout=30_000)
    header = page.locator("#cmp-table thead th").all_inner_texts()
    assert len(header) == 3 and "(baseline)" in header[1]
    kv = page.locator("#cmp-table tr[data-metric=max_total_num_tokens] td").all_inner_texts()
    assert kv[1].startswith("116,000") and kv[2].startswith("159,000") and "+37.1%" in kv[2]
    assert page.locator("#cmp-table tr[data-metric=gen_throughput] td").count() == 3
    assert "--mem_fraction_static" in page.locator("#cmp-flags").inner_text().replace("-", "_").replace("__", "--")
    assert page.evaluate("document.getElementById('cmp-overlay').dataset.shapes") == "2"
    # Copy as Markdown: the clipboard holds the table the API renders.
    page.locator("#cmp-copy").click()
    page.wait_for_function("document.getElementById('cmp-note').textContent === 'Markdown copied'")
    markdown = page.evaluate("navigator.clipboard.readText()")
    assert markdown.startswith("| config | GPU KV tokens (max_total_num_tokens) |")
    ids = ",".join(page.locator("#cmp-runs input").evaluate_all("els => els.map(e => e.value)"))
    assert markdown == httpx.get(f"{two_runs.url}/api/compare", params={"runs": ids, "format": "markdown"}).text
    assert [line.count("|") for line in markdown.splitlines()[:4]] == [8] * 4  # header, rule, one row per run
    # Download CSV: one row per metric and run.
    with page.expect_download() as info:
        page.locator("#cmp-csv").click()
    rows = list(csv.DictReader(io.StringIO(Path(info.value.path()).read_text())))
    metrics = page.locator("#cmp-table tbody tr[data-metric]").count()
    assert len(rows) == 2 * metrics
    # Align at steady state, then a window by hand too short to judge: it says so instead of a number.
    page.locator("#cmp-align").select_option("steady")
    page.wait_for_function("Number(document.getElementById('compare-view').dataset.loaded) >= 2")
    first = page.locator("#cmp-runs input").first.get_attribute("value")
    page.locator(f"[data-testid=cmp-from-{first}]").fill("900")
    page.locator(f"[data-testid=cmp-to-{first}]").fill("905")
    page.locator(f"[data-testid=cmp-apply-{first}]").click()
    page.wait_for_function("Number(document.getElementById('compare-view').dataset.loaded) >= 3")
    cells = page.locator("#cmp-table tr[data-metric=gen_throughput] td").all_inner_texts()
    assert cells[1] == "not enough steady data (the run has ended)"  # the first run ended: no "yet"
    # A hand-set window shorter than the minimum is honoured, with a note that says so (#18).
    page.locator(f"[data-testid=cmp-from-{first}]").fill("600")
    page.locator(f"[data-testid=cmp-to-{first}]").fill("800")
    page.locator(f"[data-testid=cmp-apply-{first}]").click()
    page.wait_for_function("Number(document.getElementById('compare-view').dataset.loaded) >= 4")
    assert "600–800 s (by hand)" in page.locator("#cmp-table .steady-row").inner_text()
    note = page.locator(f"[data-testid=cmp-window-note-{first}]").inner_text()
    assert "set by hand: 3.3 min, shorter than the 5.0 min minimum" in note
    assert page.locator("#cmp-table tr[data-metric=gen_throughput] td").all_inner_texts()[1][0].isdigit()
    page.locator(f"[data-testid=cmp-from-{first}]").fill("600")
    page.locator(f"[data-testid=cmp-to-{first}]").fill("1400")
    page.locator(f"[data-testid=cmp-apply-{first}]").click()
    page.wait_for_function("Number(document.getElementById('compare-view').dataset.loaded) >= 5")
    assert "600–1400 s (by hand)" in page.locator("#cmp-table .steady-row").inner_text()
    # The minimum is shown and can be changed: an hour is longer than the other run's automatic window.
    assert page.locator("[data-testid=cmp-min-steady]").input_value() == "5"
    second = page.locator("#cmp-runs input").nth(1).get_attribute("value")
    assert second != first
    page.locator("[data-testid=cmp-min-steady]").fill("60")
    page.locator("[data-testid=cmp-min-steady]").dispatch_event("change")
    page.wait_for_function("Number(document.getElementById('compare-view').dataset.loaded) >= 6")
    assert "(default 5 min)" in page.locator("[data-testid=cmp-min-default]").inner_text()
    cells = page.locator("#cmp-table tr[data-metric=gen_throughput] td").all_inner_texts()
    assert cells[1][0].isdigit() and cells[2].startswith("not enough steady data")  # by hand vs automatic
    shoot(page, "compare.png", "#compare-view")
    assert outside == []



@pytest.fixture
def running_vetoed(tmp_path: Path, serve_app: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """A host whose server was started outside kvwatch with a vetoed value (fp8 KV cache)."""
    monkeypatch.delenv("KVWATCH_TOKEN", raising=False)
    config = controlled_config(tmp_path, " --kv-cache-dtype fp8_e4m3")
    return str(serve_app(create_app(build_services(config))).url)


def test_a_preset_kept_from_a_vetoed_run_can_be_picked_and_the_kept_flag_is_marked(running_vetoed: str,
                                                                                    page: Any) -> None:
    """Only a preset that sets a vetoed value itself is disabled; one that would keep the vetoed value
    the server runs now says so, and picking it marks that row in the editor until it is removed."""
    outside = open_page(page, running_vetoed)
    page.wait_for_selector("[data-testid=preset-bf16-hicache-088]")
    assert page.locator("[data-testid=preset-fp8-hicache-090]").is_disabled()
    assert page.locator("[data-testid=veto-kept-fp8-hicache-090]").count() == 0
    kept = page.locator("[data-testid=veto-kept-bf16-hicache-088]").inner_text()
    assert "--kv-cache-dtype fp8_e4m3" in kept and "degrades the model noticeably" in kept, kept
    assert page.locator("[data-testid=preset-bf16-hicache-088]").is_enabled()
    page.locator("[data-testid=preset-bf16-hicache-088]").check()
    page.wait_for_selector("tr[data-flag=kv-cache-dtype][data-problem=vetoed]", timeout=30_000)
    assert page.locator("#ctl-review").is_disabled()
    shoot(page, "controller-kept-veto.png", "#controller-panel")
    page.locator("[data-testid=flag-remove-kv-cache-dtype]").click()
    page.wait_for_function("!document.getElementById('ctl-review').disabled", timeout=15_000)
    assert page.locator("tr[data-problem]").count() == 0
    diff = page.locator("#ctl-diff").inner_text()
    assert "--kv-cache-dtype" in diff and "--mem-fraction-static" in diff, diff
    assert outside == []
