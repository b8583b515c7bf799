"""GET /api/runs and /api/compare over real uvicorn, fed by the real collector tailing a server log
in which the three configs of the story ran one after another."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest

from kvwatch.app.main import create_app
from tests.app.slice_helpers import start_services, wait_until
from tests.compare.synth import THREE_CONFIGS, write_log

SPECS = tuple(replace(spec, duration_s=1800.0) for spec in THREE_CONFIGS)


@pytest.fixture
def server(tmp_path: Path, serve_app: Any) -> Any:
    write_log(tmp_path / "server.log", SPECS, seed=31)
    decode_lines = sum("Decode batch" in line for line in (tmp_path / "server.log").open())
    services = start_services(tmp_path)
    running = serve_app(create_app(services))
    wait_until(lambda: len(services.store.series("local", "gen_throughput")[0]) == decode_lines, timeout=60)
    return running


def test_runs_then_compare_in_every_format(server: Any) -> None:
    runs = httpx.get(f"{server.url}/api/runs", params={"host": "local"}).json()
    assert [r["flags"]["mem-fraction-static"] for r in runs] == [0.85, 0.88, 0.90]
    assert [r["capacity"]["max_total_num_tokens"] for r in runs] == [116_000, 159_000, 376_000]
    assert runs[0]["ended_at"] == runs[1]["started_at"] and runs[2]["ended_at"] is None
    assert {"id", "host", "flags", "started_at", "ended_at", "capacity"} <= set(runs[0])
    ids = ",".join(r["id"] for r in runs)
    body = httpx.get(f"{server.url}/api/compare", params={"runs": ids, "baseline": runs[2]["id"]}).json()
    assert [r["id"] for r in body["runs"]] == [r["id"] for r in runs]
    metrics = [row["metric"] for row in body["rows"]]
    assert {
        "max_total_num_tokens",
        "running_req",
        "token_usage",
        "queue_req",
        "gen_throughput",
        "completion_rate",
    } <= set(metrics)
    usage = next(row for row in body["rows"] if row["metric"] == "token_usage")
    assert len(usage["values"]) == len(usage["change_pct"]) == 3 and usage["change_pct"][2] == 0.0
    assert all(run["steady"]["status"] == "steady" and run["steady"]["auto"] for run in body["runs"])
    markdown = httpx.get(f"{server.url}/api/compare", params={"runs": ids, "format": "markdown"})
    assert markdown.headers["content-type"].startswith("text/markdown")
    assert markdown.text.startswith("| config | GPU KV tokens (max_total_num_tokens) |")
    csv = httpx.get(f"{server.url}/api/compare", params={"runs": ids, "format": "csv"})
    assert len(pd.read_csv(io.StringIO(csv.text))) == 3 * len(metrics)


def test_window_by_hand_and_overlay_aligned_at_steady_state(server: Any) -> None:
    runs = httpx.get(f"{server.url}/api/runs", params={"host": "local"}).json()
    first, second = runs[0]["id"], runs[1]["id"]
    body = httpx.get(
        f"{server.url}/api/compare",
        params=[
            ("runs", f"{first},{second}"),
            ("window", f"{first}:900:1500"),
            ("overlay", "gen_throughput,queue_req"),
            ("align", "steady"),
            ("max_points", "200"),
        ],
    ).json()
    manual, auto = body["runs"][0]["steady"], body["runs"][1]["steady"]
    assert (manual["start_offset_s"], manual["end_offset_s"], manual["auto"]) == (900.0, 1500.0, False)
    assert auto["auto"] and auto["start_offset_s"] > 300
    overlay = body["overlay"]
    assert overlay["align"] == "steady" and set(overlay["series"]) == {"gen_throughput", "queue_req"}
    for entry, steady in zip(overlay["series"]["gen_throughput"], (manual, auto), strict=True):
        assert entry["zero"] == steady["start"] and entry["steady"][0] == 0.0
        xs = [x for x, _ in entry["points"]]
        assert len(xs) <= 200 and min(xs) < 0 < max(xs)  # the warm-up before zero, the steady part after


def test_short_window_says_not_enough_data_and_bad_requests_are_refused(server: Any) -> None:
    runs = httpx.get(f"{server.url}/api/runs", params={"host": "local"}).json()
    first = runs[0]["id"]
    body = httpx.get(f"{server.url}/api/compare", params={"runs": first, "window": f"{first}:900:905"}).json()
    assert body["runs"][0]["steady"]["status"] == "too_short"
    # the first run has ended (the server restarted): no "yet", more data will not come (issue #16)
    assert body["runs"][0]["state"] == "ended"
    assert body["runs"][0]["steady"]["message"].startswith("not enough steady data (the run has ended)")
    assert next(r for r in body["rows"] if r["metric"] == "gen_throughput")["values"] == [None]
    markdown = httpx.get(
        f"{server.url}/api/compare", params={"runs": first, "window": f"{first}:900:905", "format": "markdown"}
    ).text
    assert "not enough steady data (the run has ended)" in markdown.splitlines()[2]
    assert "yet" not in markdown.splitlines()[2]
    assert httpx.get(f"{server.url}/api/compare", params={"runs": "nope"}).status_code == 404
    bad = httpx.get(f"{server.url}/api/compare", params={"runs": first, "window": f"{first}:x"})
    assert bad.status_code == 422 and "RUN_ID:FROM:TO" in bad.json()["detail"]
    assert httpx.get(f"{server.url}/api/runs", params={"host": "nope"}).status_code == 404


def test_a_hand_set_window_shorter_than_the_minimum_is_used_with_a_note(server: Any) -> None:
    first = httpx.get(f"{server.url}/api/runs", params={"host": "local"}).json()[0]["id"]
    body = httpx.get(f"{server.url}/api/compare", params={"runs": first, "window": f"{first}:900:1020"}).json()
    steady = body["runs"][0]["steady"]
    assert (steady["status"], steady["auto"], steady["duration_s"]) == ("steady", False, 120.0)
    assert steady["message"] == "set by hand: 2.0 min, shorter than the 5.0 min minimum for an automatic window"
    assert body["min_steady_s"] == body["default_min_steady_s"] == 300.0
    gen = next(r for r in body["rows"] if r["metric"] == "gen_throughput")
    assert gen["values"][0] is not None and gen["values"][0] > 0
    shorter = httpx.get(f"{server.url}/api/compare", params={"runs": first, "window": f"{first}:900:1020",
                                                             "min_steady": 60}).json()
    assert shorter["min_steady_s"] == 60.0 and shorter["runs"][0]["steady"]["message"] == "set by hand"
