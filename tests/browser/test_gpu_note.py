"""A host with no GPU samples (`gpu` is off by default) shows why its GPU charts are empty, in the
charts themselves; once GPU samples come, the tab that stayed open draws them and the note goes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from tests.browser.test_charts_from_catalog import commit_gpus
from tests.browser.world import ScriptedRun
from tests.fixtures.web import open_dashboard

pytestmark = pytest.mark.browser
NOTES = """() => ['chart-gpu-util', 'chart-gpu-mem', 'chart-usage'].map((id) =>
  (document.getElementById(id).layout.annotations || []).filter((a) => a.name === 'note').map((a) => a.text))"""
GPU_LINES = "document.getElementById('chart-gpu-util').data.filter((d) => d.x.length > 0).length"


def test_empty_gpu_charts_say_why_and_the_open_tab_drops_the_note_when_samples_come(
        tmp_path: Path, serve_app: Any, page: Any) -> None:
    services = build_services(ScriptedRun(tmp_path).config())
    url = str(serve_app(create_app(services)).url)
    outside = open_dashboard(page, url)
    util, mem, usage = page.evaluate(NOTES)
    assert len(util) == 1 and util == mem and usage == []  # only the GPU charts, and only the note
    assert util[0].startswith("no GPU samples from this host<br>") and "gpu = true" in util[0]
    assert page.evaluate(GPU_LINES) == 0

    commit_gpus(services)  # as the GPU collector would, then its stream event
    now = time.time()
    services.bus.publish("sample", {"host": "gpu1", "points": {"gpu_util_pct": [[now, 83.0]]},
                                    "stamp_index": {"gpu_util_pct": 0}})
    page.wait_for_function(f"() => ({NOTES})()[0].length === 0 && {GPU_LINES} > 0", timeout=20_000)
    assert page.evaluate(NOTES) == [[], [], []]
    assert outside == []
