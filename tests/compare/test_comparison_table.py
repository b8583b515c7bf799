"""The three configs of the-run-it-serves.md, played one after another in one server log: the table
reproduces the direction and size of each change, as Markdown (same shape) and CSV."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from kvwatch.app.compare import compare_runs, render
from kvwatch.app.compare.offline import load_logs
from kvwatch.app.runs import list_runs
from tests.compare.synth import THREE_CONFIGS, write_log

REFERENCE_HEADER = (
    "| config | GPU KV tokens (max_total_num_tokens) | concurrent decode reqs | token usage | queue | gen tok/s |"
)


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("campaign") / "sglang_inference.log"
    write_log(path, THREE_CONFIGS, seed=21)
    store, hosts = load_logs([path])
    runs = list_runs(store, hosts[0])
    _, result = compare_runs(store, runs, baseline=runs[2].id)  # the fp8 run, as in the story
    return result


def row(result: dict[str, Any], metric: str) -> dict[str, Any]:
    return next(r for r in result["rows"] if r["metric"] == metric)


def test_the_price_of_vetoing_fp8_matches_the_story(campaign: dict[str, Any]) -> None:
    # "about -58% KV tokens, -52% concurrency, -28 to -36% throughput, a queue forming, usage at 0.96"
    hicache = 1
    assert row(campaign, "max_total_num_tokens")["change_pct"][hicache] == pytest.approx(-57.7, abs=0.1)
    assert row(campaign, "running_req")["change_pct"][hicache] == pytest.approx(-52, abs=3)
    assert -36 <= row(campaign, "gen_throughput")["change_pct"][hicache] <= -28
    assert row(campaign, "token_usage")["values"][hicache] == pytest.approx(0.96, abs=0.01)
    queue = row(campaign, "queue_req")["values"]
    assert queue[2] == 0 and queue[hicache] == pytest.approx(79, abs=2)
    for metric in ("max_total_num_tokens", "running_req", "token_usage", "queue_req", "gen_throughput"):
        assert row(campaign, metric)["within_noise"][hicache] is False, metric


def test_every_step_of_the_campaign_goes_the_right_way(campaign: dict[str, Any]) -> None:
    for metric in ("max_total_num_tokens", "running_req", "gen_throughput", "completion_rate"):
        default, hicache, fp8 = row(campaign, metric)["values"]
        assert default < hicache < fp8, metric
    default, hicache, fp8 = row(campaign, "token_usage")["values"]
    assert fp8 < 0.7 < default and hicache > 0.9
    assert all(status == "steady" for status in row(campaign, "gen_throughput")["status"])


def test_flag_diff_and_labels(campaign: dict[str, Any]) -> None:
    diff = {d["flag"]: d["values"] for d in campaign["flag_diff"]}
    assert diff["mem-fraction-static"] == [0.85, 0.88, 0.90]
    assert diff["kv-cache-dtype"] == [None, None, "fp8_e4m3"]
    assert "model-path" not in diff
    assert campaign["runs"][1]["label"] == "--mem-fraction-static 0.88 --enable-hierarchical-cache --hicache-size 48"


def test_markdown_has_the_shape_of_the_hand_made_table(campaign: dict[str, Any]) -> None:
    lines = render(campaign, "markdown").splitlines()
    assert lines[0].startswith(REFERENCE_HEADER)
    assert lines[1].startswith("|---|---|")
    body = lines[2:5]
    assert body[1].startswith(
        "| --mem-fraction-static 0.88 --enable-hierarchical-cache --hicache-size 48 | 159K -58% |"
    )
    assert body[2].startswith("| baseline: --mem-fraction-static 0.9")
    assert all(line.count("|") == lines[0].count("|") for line in body)


def test_csv_is_one_row_per_metric_and_run(campaign: dict[str, Any]) -> None:
    table = pd.read_csv(io.StringIO(render(campaign, "csv")))
    assert len(table) == len(campaign["rows"]) * 3
    tokens = table[table.metric == "gen_throughput"].set_index("run")
    assert (tokens.ci_low <= tokens.value).all() and (tokens.value <= tokens.ci_high).all()
    assert tokens.loc[campaign["baseline"], "change_pct"] == 0.0


def test_baseline_must_be_one_of_the_runs(tmp_path: Path) -> None:
    path = tmp_path / "one.log"
    write_log(path, THREE_CONFIGS[:1], seed=1)
    store, hosts = load_logs([path])
    runs = list_runs(store, hosts[0])
    from kvwatch.app.errors import KvwatchError

    with pytest.raises(KvwatchError, match="baseline 'nope' is not one of the compared runs"):
        compare_runs(store, runs, baseline="nope")
