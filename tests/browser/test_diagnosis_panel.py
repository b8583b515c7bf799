"""The diagnosis panel in Debian's Chromium against a real uvicorn: the demo's story stored for a host
with a controller (its 0.88 run live and KV-bound), the diagnosis read as a sentence with its numbers,
its suggestions with their predicted effect (none of them the host's vetoed fp8 KV cache), and a
suggestion's button that fills the controller's flag editor with that change, restarting nothing; and
a run ready seconds ago whose what-if says which earlier run's measurements it rests on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.compare.offline import load_log
from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from kvwatch.app.runs import list_runs
from kvwatch.app.store.sqlite import SqliteStore
from tests.browser.test_panels import controlled_config, open_page, shoot
from tests.diagnosis.livestory import write_live_story
from tests.diagnosis.test_diagnosis_first_seconds import write_story_with_new_run

pytestmark = pytest.mark.browser


@pytest.fixture
def kv_bound_host(tmp_path: Path, serve_app: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delenv("KVWATCH_TOKEN", raising=False)
    services = build_services(controlled_config(tmp_path))
    write_live_story(tmp_path / "story.log")
    assert isinstance(services.store, SqliteStore)
    load_log(services.store, "gpu1", tmp_path / "story.log")
    yield services, serve_app(create_app(services)).url
    services.controllers["gpu1"].remote.stop(5)


def test_the_diagnosis_is_a_sentence_and_a_suggestion_fills_the_flag_editor(kv_bound_host: Any, page: Any) -> None:
    services, url = kv_bound_host
    outside = open_page(page, url)
    sentence = page.locator("[data-testid=diag-sentence]")
    sentence.wait_for(timeout=30_000)
    text = sentence.inner_text()
    assert text.startswith("KV-bound: token usage 0.9") and " running, queue " in text and "tok/s" in text, text
    suggestions = page.locator("[data-testid=diag-suggestions] > li").all_inner_texts()
    assert not any("fp8" in s for s in suggestions), suggestions  # vetoed on this host
    raise_fraction = next(i for i, s in enumerate(suggestions) if "--mem-fraction-static 0.88 -> 0.9" in s)
    effect = page.locator(f"[data-testid=diag-effect-{raise_fraction}]").inner_text()
    assert "KV tokens" in effect and "running" in effect and "tok/s" in effect and "unknown" not in effect, effect
    page.locator("[data-testid=ctl-editor] tr[data-flag]").first.wait_for(timeout=30_000)
    field = page.locator("[data-testid=flag-input-mem-fraction-static]")
    assert field.input_value() == "0.88"  # the flags the 0.88 run logged, read from its log
    runs_before = len(services.store.events("gpu1", kinds=("event",), limit=100_000))
    page.locator(f"[data-testid=diag-fill-{raise_fraction}]").click()
    page.wait_for_function("document.querySelector('[data-testid=flag-input-mem-fraction-static]').value === '0.9'",
                           timeout=10_000)
    page.wait_for_function("document.getElementById('ctl-diff').textContent"
                           ".includes('--mem-fraction-static 0.88 → 0.9')", timeout=10_000)
    assert "in the editor" in page.locator(f"[data-testid=diag-fill-note-{raise_fraction}]").inner_text()
    assert page.locator("#ctl-confirm").is_hidden() and page.locator("#ctl-progress").is_hidden()  # nothing restarts
    assert len(services.store.events("gpu1", kinds=("event",), limit=100_000)) == runs_before
    shoot(page, "diagnosis-panel.png", "#diagnosis-panel")
    assert outside == []


@pytest.fixture
def just_ready_host(tmp_path: Path, serve_app: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delenv("KVWATCH_TOKEN", raising=False)
    services = build_services(controlled_config(tmp_path))
    write_story_with_new_run(tmp_path / "story.log", ready=True)
    assert isinstance(services.store, SqliteStore)
    load_log(services.store, "gpu1", tmp_path / "story.log")
    yield services, serve_app(create_app(services)).url
    services.controllers["gpu1"].remote.stop(5)


def test_a_run_ready_seconds_ago_is_predicted_from_the_earlier_run_and_says_so(just_ready_host: Any,
                                                                               page: Any) -> None:
    services, url = just_ready_host
    earlier = list_runs(services.store, "gpu1")[1].id  # the 0.88 run
    outside = open_page(page, url)
    source = page.locator("[data-testid=pred-from-run]")
    source.wait_for(timeout=30_000)
    assert source.inner_text().startswith(f"from run {earlier}'s measurements"), source.inner_text()
    for testid in ("pred-tokens", "pred-running", "pred-throughput"):
        assert "unknown" not in page.locator(f"[data-testid={testid}]").inner_text()
    assert page.locator("[data-testid=pred-risks] li[data-kind=unknown]").count() == 0
    assert outside == []
