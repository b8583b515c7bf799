"""The three configs of the-run-it-serves.md played by the simulator's engine, one after another in
one server log (an hour each, restarts in between), read back only through the log.

Truth comes from the engine itself, read every simulated second (tests/compare/simplay.py). The
simulated server has slow swings of its own (10-minute medians of running requests move by about
±5%), so the truth is taken over the same window the tool chose: the test is of the measurement.
Whether that window is steady is tested against the second half of each run, the settled state.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.compare import compare_runs, compute_run_stats, render
from kvwatch.app.compare.offline import load_logs
from kvwatch.app.runs import list_runs
from tests.compare.simplay import SLOW_SETTLING, STORY_SPECS, play_campaign

LEVELS = ("gen_throughput", "running_req", "token_usage", "queue_req")


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("story") / "sglang_inference.log"
    played = play_campaign(path, STORY_SPECS, duration_s=3600.0, seed=0, dataset=SLOW_SETTLING)
    store, hosts = load_logs([path])
    runs = list_runs(store, hosts[0])
    stats, result = compare_runs(store, runs, baseline=runs[2].id)
    return {"played": played, "stats": stats, "result": result, "store": store, "runs": runs}


def close_enough(metric: str, measured: float, true: float) -> bool:
    # 2%; counts are whole requests and usage is logged with 2 decimals, so never finer than that.
    floor = {"running_req": 1.0, "queue_req": 1.0, "token_usage": 0.005}.get(metric, 0.0)
    return abs(measured - true) <= max(0.02 * abs(true), floor)


def test_the_log_tells_the_three_runs_apart(story: dict[str, Any]) -> None:
    runs, played = story["runs"], story["played"]
    assert len(runs) == 3
    assert [run.flags["mem-fraction-static"] for run in runs] == [0.85, 0.88, 0.90]
    for run, play in zip(runs, played, strict=True):
        assert run.started_at == pytest.approx(play.start_epoch, abs=1)


def test_steady_medians_match_the_engine_within_2_percent(story: dict[str, Any]) -> None:
    for stats, play in zip(story["stats"], story["played"], strict=True):
        assert stats.window.status == "steady"
        truth = play.truth(stats.window.start, stats.window.end)
        for metric in LEVELS:
            assert close_enough(metric, stats.levels[metric].value, truth[metric]), (metric, truth)
        assert stats.rate is not None
        assert stats.rate.value == pytest.approx(truth["completion_rate"], rel=0.05)


def test_the_warm_up_is_excluded_and_what_is_kept_is_the_settled_state(story: dict[str, Any]) -> None:
    for stats, play in zip(story["stats"], story["played"], strict=True):
        ready = play.state[0, 0]
        burst = play.truth(ready, ready + 120)
        settled = play.truth(play.start_epoch + 1800, play.end_epoch)
        # The first two minutes are the burst: far from the settled state in running requests or usage.
        assert (
            abs(burst["running_req"] / settled["running_req"] - 1) > 0.2
            or abs(burst["token_usage"] - settled["token_usage"]) > 0.1
        )
        assert stats.window.start > ready + 120
        kept = play.truth(stats.window.start, stats.window.end)
        for metric in ("gen_throughput", "token_usage", "running_req", "queue_req"):
            floor = {"running_req": 2.0, "queue_req": 2.0, "token_usage": 0.01}.get(metric, 0.0)
            assert abs(kept[metric] - settled[metric]) <= max(0.03 * settled[metric], floor), metric


def test_without_the_cut_the_slow_fill_of_the_fp8_run_would_bias_usage(story: dict[str, Any]) -> None:
    fp8, play = story["runs"][2], story["played"][2]
    whole = compute_run_stats(story["store"], fp8, manual=(0.0, None))
    settled = play.truth(play.start_epoch + 1800, play.end_epoch)["token_usage"]
    assert settled - whole.levels["token_usage"].value > 0.02
    assert close_enough("token_usage", story["stats"][2].levels["token_usage"].value, settled)


def row(result: dict[str, Any], metric: str) -> dict[str, Any]:
    return next(r for r in result["rows"] if r["metric"] == metric)


def test_the_table_reproduces_the_story(story: dict[str, Any]) -> None:
    result = story["result"]
    default, hicache = 0, 1
    # The price of the fp8 veto: "about -58% KV tokens, -52% concurrency, -28 to -36% throughput,
    # a queue forming, usage at 0.96".
    assert row(result, "max_total_num_tokens")["change_pct"][hicache] == pytest.approx(-58, abs=1.5)
    assert row(result, "running_req")["change_pct"][hicache] == pytest.approx(-52, abs=5)
    assert -36 <= row(result, "gen_throughput")["change_pct"][hicache] <= -28
    queue = row(result, "queue_req")["values"]
    assert queue[2] == 0 and queue[hicache] == pytest.approx(79, rel=0.15)
    usage = row(result, "token_usage")["values"]
    assert usage[hicache] >= 0.95 and usage[2] < usage[hicache]
    # The default config's line: 116K tokens, 600-850 tok/s.
    assert row(result, "max_total_num_tokens")["values"][default] == pytest.approx(116_000, rel=0.01)
    assert 600 <= row(result, "gen_throughput")["values"][default] <= 850
    for metric in ("max_total_num_tokens", "running_req", "gen_throughput", "completion_rate"):
        values = row(result, metric)["values"]
        assert values[0] < values[1] < values[2], metric
        assert row(result, metric)["within_noise"][hicache] is False, metric


def test_markdown_of_the_story(story: dict[str, Any], tmp_path: Path) -> None:
    text = render(story["result"], "markdown")
    (tmp_path / "table.md").write_text(text)
    lines = text.splitlines()
    assert lines[3].startswith("| --mem-fraction-static 0.88 ")
    assert "159K -58%" in lines[3]
    assert lines[4].startswith("| baseline: --mem-fraction-static 0.9 ") and "| 375K |" in lines[4]
