"""The fleet's order and totals, on literal rows (app/fleet)."""

from __future__ import annotations

from kvwatch.app.fleet.attention import ordered
from kvwatch.app.fleet.totals import common_flags, flag_difference, job_totals


def row(host: str, **fields: object) -> dict[str, object]:
    return {"host": host, "alerts": [], "verdict": None, "collector_state": "up", **fields}


def test_firing_alerts_lead_then_trouble_then_kv_bound_then_the_rest_in_configured_order() -> None:
    rows = [
        row("a"),
        row("b", verdict="kv_bound"),
        row("c", alerts=[{"rule": "queue_growing", "state": "pending"}]),
        row("d", verdict="client_stalled", verdict_label="client stalled"),
        row("e", alerts=[{"rule": "token_usage_high", "state": "firing"}], verdict="kv_bound"),
        row("f", collector_state="failed"),
        row("g", verdict="kv_bound"),
    ]
    out = ordered(rows)
    assert [(r["host"], r["attention"]) for r in out] == [
        ("e", "alert"), ("d", "trouble"), ("f", "trouble"), ("b", "kv_bound"), ("g", "kv_bound"),
        ("a", "ok"), ("c", "ok")]
    assert out[0]["attention_reason"] == "firing: token_usage_high"
    assert out[1]["attention_reason"] == "verdict: client stalled"
    assert out[2]["attention_reason"] == "collector failed"


def test_job_totals_add_up_and_the_job_eta_is_the_remaining_work_at_the_summed_pace() -> None:
    rows = [row("a", gen_throughput=900.0, completions=100.0, target_completions=1000, completion_pace=1.0,
                eta_s=900.0),
            row("b", gen_throughput=1100.0, completions=500.0, target_completions=1000, completion_pace=2.0,
                eta_s=250.0),
            row("c", gen_throughput=None, completions=None)]
    totals = job_totals(rows)
    assert totals["gen_throughput"] == 2000.0 and totals["completions"] == 600.0
    assert totals["target_completions"] == 2000.0 and totals["completion_pace"] == 3.0
    assert totals["eta_s"] == (900 + 500) / 3.0
    assert totals["last_host_eta_s"] == 900.0


def test_the_common_config_is_what_most_runs_have_and_each_difference_is_named() -> None:
    base = {"mem-fraction-static": 0.88, "enable-hierarchical-cache": True}
    fp8 = {"mem-fraction-static": 0.9, "kv-cache-dtype": "fp8_e4m3"}
    rows = [row("a", flags=fp8), row("b", flags=base), row("c", flags=dict(base)), row("d", flags=None)]
    common = common_flags(rows)
    assert common == base
    assert flag_difference(base, common) == {}
    assert flag_difference(fp8, common) == {"mem-fraction-static": 0.9, "kv-cache-dtype": "fp8_e4m3",
                                            "enable-hierarchical-cache": None}
    assert flag_difference(None, common) == {}
    assert common_flags([row("x")]) == {}


def test_sparks_are_bucket_means_with_gaps_left_empty() -> None:
    import numpy as np

    from kvwatch.app.fleet.sparks import bucket_means

    t = np.array([1.0, 2.0, 3.0, 9.0, 10.0])
    v = np.array([10.0, 20.0, 30.0, 5.0, 7.0])
    assert bucket_means(t, v, end=10.0, window=10.0, points=5) == [15.0, 30.0, None, None, 6.0]  # (0,2], (2,4], ...]
    assert bucket_means(t, v, end=20.0, window=5.0, points=2) == [None, None]
