"""The compare view in Debian's Chromium when retention pruned the first run's raw samples: its cells say
they came from the 10 s rollup, the raw run's do not, and the rule is shown under the table."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.main import create_app
from kvwatch.app.runs import list_runs
from tests.app.slice_helpers import start_services, wait_until
from tests.browser.test_panels import open_page
from tests.compare.synth import THREE_CONFIGS, write_log

pytestmark = pytest.mark.browser


def test_compare_view_marks_cells_read_from_rollups(tmp_path: Path, serve_app: Any, page: Any) -> None:
    specs = tuple(replace(spec, duration_s=1500.0) for spec in THREE_CONFIGS[:2])
    write_log(tmp_path / "server.log", specs, seed=7)
    decode_lines = sum("Decode batch" in line for line in (tmp_path / "server.log").open())
    services = start_services(tmp_path)
    running = serve_app(create_app(services))
    store = services.store
    wait_until(lambda: len(store.series("local", "gen_throughput")[0]) == decode_lines, timeout=60)
    _, second = list_runs(store, "local")
    assert store.prune(second.started_at) > 1000  # the first run: only its rollups are left
    outside = open_page(page, running.url)
    page.wait_for_function("Number(document.getElementById('compare-view').dataset.loaded) >= 1", timeout=30_000)
    cells = page.locator("#cmp-table tr[data-metric=gen_throughput] td").all_inner_texts()
    assert "[10 s rollup]" in cells[1] and "[10 s rollup]" not in cells[2]
    title = page.locator("#cmp-table tr[data-metric=gen_throughput] td .rollup-mark").get_attribute("title")
    assert title is not None and title.startswith("100% of the steady window from 10 s rollup buckets")
    capacity = page.locator("#cmp-table tr[data-metric=max_total_num_tokens] td").all_inner_texts()
    assert not any("rollup" in c for c in capacity)  # from the start-up lines: exact
    assert "level rows' median" in page.locator("#cmp-table .rollup-note").inner_text()
    assert outside == []
