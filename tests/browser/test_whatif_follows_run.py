"""The restart panel's prediction follows the run it rests on: a server that has started but not yet
logged its KV capacity gives "unknown"; once the capacity lines are in the log the panel answers with
numbers without any edit (the panel looks at the host again every 10 s)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from tests.controller.support import free_port, host_table
from tests.fixtures.web import open_dashboard, wait_panels

pytestmark = pytest.mark.browser


def stamp() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())


@pytest.fixture
def served(tmp_path: Path, serve_app: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    monkeypatch.delenv("KVWATCH_TOKEN", raising=False)
    monkeypatch.setenv("TZ", "UTC")
    table = host_table(tmp_path, free_port())
    (tmp_path / "logs").mkdir()
    log = Path(table["server_log"])
    log.write_text(f"[{stamp()}] server_args={{'model_path': '/models/Kimi-K2.5', 'tp_size': 8, "
                   "'mem_fraction_static': 0.85, 'kv_cache_dtype': 'auto'}\n", encoding="utf-8")
    host = HostConfig(name="gpu1", ssh="local", server_log=table["server_log"], launch=table["launch"],
                      timezone="UTC", **{key: table[key] for key in ("presets", "vetoes", "restart")})
    config = Config(server=ServerConfig(data_dir=str(tmp_path), database="kvwatch.db", token="t0ken-" * 6),
                    hosts=(host,))
    services = build_services(config)
    return serve_app(create_app(services)).url, log


def test_the_prediction_answers_once_the_run_logs_its_capacity(served: tuple[str, Path], page: Any) -> None:
    url, log = served
    outside = open_dashboard(page, url)
    wait_panels(page)
    unknown = page.locator("[data-testid=pred-risks] li[data-kind=unknown]")
    unknown.first.wait_for(timeout=30_000)
    assert "logged no KV capacity yet" in unknown.first.inner_text()
    assert "unknown" in page.locator("[data-testid=pred-tokens]").inner_text()
    with log.open("a", encoding="utf-8") as out:
        out.write(f"[{stamp()} TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 115980, "
                  "KV size: 11.36 GB\n")
        out.write(f"[{stamp()} TP0] max_total_num_tokens=115980, chunked_prefill_size=8192, "
                  "max_prefill_tokens=16384, max_running_requests=2048, context_len=262144, "
                  "available_gpu_mem=19.16 GB\n")
    # No edit: the panel's idle look at the host (every 10 s) asks again.
    page.wait_for_function("!document.querySelector('[data-testid=pred-tokens]').textContent.includes('unknown')",
                           timeout=30_000)
    # No flag changed: the pool the run logged.
    assert "115,980" in page.locator("[data-testid=pred-tokens]").inner_text()
    # What is still unknown is the workload, and why: this host has no earlier run that measured one.
    left = page.locator("[data-testid=pred-risks] li[data-kind=unknown]").all_inner_texts()
    assert not any("KV capacity" in text for text in left), left
    assert left and all("no earlier run of this host with the same workload" in text for text in left), left
    assert "unknown" in page.locator("[data-testid=pred-running]").inner_text()
    assert outside == []


def test_a_server_kvwatch_did_not_start_is_the_base_of_the_diff(served: tuple[str, Path], page: Any) -> None:
    """The log's server (0.85, started by hand) is what "runs now" means, not the launch line: picking
    the 0.88 preset shows 0.85 -> 0.88, and keeping the flags that run now changes nothing."""
    url, _ = served
    open_dashboard(page, url)
    wait_panels(page)
    summary = page.locator("#ctl-current summary")
    summary.wait_for(timeout=30_000)
    page.wait_for_function("document.querySelector('#ctl-current summary').textContent.includes('read from its log')",
                           timeout=30_000)
    assert page.locator("[data-testid=flag-input-mem-fraction-static]").input_value() == "0.85"
    assert "no change" in page.locator("#ctl-diff").inner_text()
    page.locator("[data-testid=preset-bf16-hicache-088]").check()
    diff = page.locator("#ctl-diff").inner_text()
    assert "--mem-fraction-static" in diff and "0.85" in diff and "0.88" in diff
