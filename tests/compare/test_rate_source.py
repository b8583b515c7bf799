"""Compare takes every run's completion rate from one source, names it, and never tells an ended run
to wait for more data (issue #16)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from kvwatch.app.compare import RunStats, compare_runs, render
from kvwatch.app.compare.offline import load_logs
from kvwatch.app.compare.sources import common_source, status_text
from kvwatch.app.compare.stats import Summary
from kvwatch.app.compare.steady import SteadyWindow
from kvwatch.app.compare.table import comparison
from kvwatch.app.runs import list_runs
from kvwatch.app.runs.model import Run
from kvwatch.app.store.base import Batch, Sample
from kvwatch.app.store.sqlite import SqliteStore
from tests.compare.synth import THREE_CONFIGS, write_log

ADMISSIONS = "admissions (prefill #new-seq less retractions)"
SPECS = tuple(replace(spec, duration_s=1800.0) for spec in THREE_CONFIGS[:2])


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[SqliteStore, list[Any]]:
    path = tmp_path_factory.mktemp("sources") / "sglang_inference.log"
    write_log(path, SPECS, seed=11)
    store, hosts = load_logs([path])
    runs = list_runs(store, hosts[0])
    assert len(runs) == 2
    # Only the first run has output files, growing at 2/s: a rate from them against the second run's
    # admissions would be a different quantity (and here 10x the server's own rate).
    add_output_counts(store, runs[0], per_s=2.0)
    return store, runs


def add_output_counts(store: SqliteStore, run: Any, per_s: float) -> None:
    """Output files seen growing during the run, at `per_s` lines a second (not the server's rate)."""
    start = run.started_at + 60
    end = run.ended_at if run.ended_at is not None else start + 1700
    samples = [Sample("completions", "", t, float(int((t - start) * per_s)))
               for t in range(int(start), int(end), 5)]
    store.commit(Batch(run.host, "outputs", "/prepared/B2/raw_responses.jsonl", samples=samples))


def rate_row(result: dict[str, Any]) -> dict[str, Any]:
    return next(r for r in result["rows"] if r["metric"] == "completion_rate")


def test_common_source_is_the_best_every_run_has() -> None:
    assert common_source([["completions", "client_done", "new_seq"], ["completions", "new_seq"]]) == "completions"
    assert common_source([["completions", "new_seq"], ["client_done", "new_seq"]]) == "new_seq"
    assert common_source([["client_done", "new_seq"], ["client_done"]]) == "client_done"
    assert common_source([["completions"], ["new_seq"]]) is None
    assert common_source([]) is None


def test_runs_with_different_sources_use_the_one_they_share_and_name_it(
    two_runs: tuple[SqliteStore, list[Any]],
) -> None:
    store, runs = two_runs
    _, result = compare_runs(store, runs)
    row = rate_row(result)
    assert row["source"] == [ADMISSIONS, ADMISSIONS]
    assert row["same_source"] is True
    assert row["source_note"] == f"every run: {ADMISSIONS}"
    for value, spec in zip(row["values"], SPECS, strict=True):
        assert value == pytest.approx(spec.truth.completion_rate, rel=0.15)  # not the files' 2/s
    assert row["change_pct"][1] > 0  # 0.23/s against 0.17/s: the right direction
    gen = next(r for r in result["rows"] if r["metric"] == "gen_throughput")
    assert gen["combine"] == ["as logged (one series)"] * 2  # one server line per step: no DP ranks
    markdown = render(result, "markdown")
    assert f"completions/s from: every run: {ADMISSIONS}." in markdown
    assert ADMISSIONS in render(result, "csv").splitlines()[-1]


def test_a_run_alone_keeps_its_best_source(two_runs: tuple[SqliteStore, list[Any]]) -> None:
    store, runs = two_runs
    _, alone = compare_runs(store, runs[:1])
    assert rate_row(alone)["source"] == ["output files"]
    assert rate_row(alone)["values"][0] == pytest.approx(2.0, rel=0.02)


def test_an_ended_run_never_says_not_enough_data_yet(two_runs: tuple[SqliteStore, list[Any]]) -> None:
    store, runs = two_runs
    ended, live = runs
    assert ended.state == "ended" and live.state != "ended"
    _, result = compare_runs(store, runs, windows={ended.id: (900.0, 905.0), live.id: (900.0, 905.0)})
    ended_steady, live_steady = (r["steady"] for r in result["runs"])
    assert ended_steady["status"] == live_steady["status"] == "too_short"
    assert ended_steady["message"].startswith("not enough steady data (the run has ended)")
    assert "yet" not in ended_steady["message"]
    assert live_steady["message"].startswith("not enough steady data yet")
    gen = next(r for r in result["rows"] if r["metric"] == "gen_throughput")
    assert gen["status_text"] == ["not enough steady data (the run has ended)", "not enough steady data yet"]
    markdown = render(result, "markdown")
    first_row = next(line for line in markdown.splitlines() if ended.id in line or "baseline" in line)
    assert "yet" not in first_row


def test_status_text_words() -> None:
    assert status_text("too_short", ended=True) == "not enough steady data (the run has ended)"
    assert status_text("settling", ended=False) == "not enough steady data yet"
    assert status_text("no_data", ended=True) == "no data"


def literal_stats(run_id: str, rate: float, source: str) -> RunStats:
    run = Run(id=run_id, host="gpu1", started_at=0.0, ended_at=4000.0)
    stats = RunStats(run, SteadyWindow(600.0, 3600.0, "steady", True), 1.0, 3600.0)
    stats.rate = Summary(rate, rate, rate, rate, rate, 100, 10, np.full(50, rate))
    stats.rate_source = source
    return stats


def test_rates_from_different_sources_get_no_change_and_say_why() -> None:
    """When the runs share no source (alignment found none), the table names each and computes no change."""
    stats = [literal_stats("a", 0.2, "output files"), literal_stats("b", 0.78, ADMISSIONS)]
    row = rate_row(comparison(stats))
    assert row["source"] == ["output files", ADMISSIONS]
    assert row["same_source"] is False
    assert row["values"] == [0.2, 0.78]
    assert row["change_pct"] == [0.0, None] and row["within_noise"] == [None, None]
    assert row["source_note"] == (f"sources differ (a: output files, b: {ADMISSIONS}); "
                                  "no change is computed across different sources")
    same = rate_row(comparison([literal_stats("a", 0.2, ADMISSIONS), literal_stats("b", 0.25, ADMISSIONS)]))
    assert same["same_source"] is True and same["change_pct"][1] == pytest.approx(25.0)
