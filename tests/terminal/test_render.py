"""The status block from literal /status answers: every view on its own line, numbers as given."""

from __future__ import annotations

from typing import Any

from kvwatch.app.terminal.render import duration, flag_words, render_all, render_block
from tests.terminal.answers import EMPTY, SATURATED


def test_the_saturated_host_in_one_block() -> None:
    assert render_block(SATURATED) == (
        "gpu1  as of 2026-02-25 06:13:20 UTC  collector up\n"
        "  run      gpu1-20260225T060000  running for 13m20s\n"
        "  config   --tp-size 8 --mem-fraction-static 0.88 --enable-hierarchical-cache --hicache-size 48\n"
        "  server   930.6 tok/s (5-min mean 912.4)  KV 0.96  running 72  queue 79  (3 s ago)\n"
        "  client   1604/3500 (46%) 12 s ago\n"
        "  outputs  B2_opencodeinstruct 1604  B6 200  | 1804 of 88000  1.25/s  ETA 19h10m\n"
        "  alerts   FIRING token_usage_high 0.97 for 4m10s\n"
    )


def test_a_young_runs_mean_says_how_long_it_covers() -> None:
    young = {**SATURATED, "gen_throughput_mean": 530.0, "mean_window_s": 14.0}
    line = next(line for line in render_block(young).splitlines() if line.startswith("  server"))
    assert line.startswith("  server   930.6 tok/s (mean over 14 s 530.0)  KV 0.96")
    full = {**SATURATED, "gen_throughput_mean": 912.44, "mean_window_s": 300.0}
    assert "(5-min mean 912.4)" in render_block(full)


def test_the_verdict_line_appears_when_the_diagnosis_gave_one() -> None:
    text = render_block({**SATURATED, "verdict": "kv_bound"})
    assert text.endswith("  alerts   FIRING token_usage_high 0.97 for 4m10s\n  verdict  kv_bound\n")


def test_a_silent_client_is_flagged() -> None:
    silent: dict[str, Any] = {**SATURATED, "client": {"done": 0.0, "total": None, "age_s": 900.0, "silent": True}}
    line = next(line for line in render_block(silent).splitlines() if line.startswith("  client"))
    assert line == "  client   0/- 15m00s ago  SILENT while outputs grow (stdout buffered?)"


def test_a_host_with_nothing_yet() -> None:
    assert render_block(EMPTY) == (
        "gpu2  as of 2026-02-25 06:13:20 UTC  collector connecting\n"
        "  run      none detected yet\n"
        "  server   - tok/s (5-min mean -)  KV -  running -  queue -  (no samples yet)\n"
        "  alerts   none\n"
    )


def test_colour_only_when_asked_and_only_on_what_needs_attention() -> None:
    plain = render_block(SATURATED)
    coloured = render_block(SATURATED, colour=True)
    assert "\x1b[" not in plain
    assert "\x1b[31m0.96\x1b[0m" in coloured  # usage at or above 0.95
    assert "\x1b[31mFIRING\x1b[0m" in coloured
    calm = render_block({**SATURATED, "token_usage": 0.61, "alerts": []}, colour=True)
    assert "KV 0.61" in calm


def test_several_alerts_line_up_under_one_label() -> None:
    second = {"rule": "queue_growing", "state": "firing", "since": SATURATED["as_of"] - 30.0, "value": 92.0}
    lines = render_block({**SATURATED, "alerts": [*SATURATED["alerts"], second]}).splitlines()
    assert lines[-2:] == ["  alerts   FIRING token_usage_high 0.97 for 4m10s",
                          "           FIRING queue_growing 92 for 30 s"]


def test_pending_alerts_and_a_reached_target() -> None:
    pending = {**SATURATED, "eta_s": 0.0, "alerts": [{"rule": "queue_growing", "state": "pending", "since": None,
                                                      "value": None}]}
    lines = render_block(pending).splitlines()
    assert "  alerts   PENDING queue_growing" in lines
    assert lines[5].endswith("1.25/s  done")


def test_hosts_are_separated_by_a_blank_line() -> None:
    assert render_all([SATURATED, EMPTY]) == render_block(SATURATED) + "\n" + render_block(EMPTY)


def test_durations() -> None:
    assert [duration(s) for s in (None, 0.4, 59.6, 61, 3599, 3600 * 3 + 300, 86400 * 3 + 3600)] == [
        "?", "0 s", "1m00s", "1m01s", "59m59s", "3h05m", "3d01h"]


def test_flags_as_typed_leave_out_switches_that_are_off() -> None:
    flags = {"kv-cache-dtype": "fp8_e4m3", "enable-hierarchical-cache": True, "disable-radix-cache": False,
             "max-running-requests": None}
    assert flag_words(flags) == "--kv-cache-dtype fp8_e4m3 --enable-hierarchical-cache"
    assert flag_words({}) == "(defaults)"


def test_an_older_kvwatch_without_defining_flags_shows_every_flag() -> None:
    run = {key: value for key, value in SATURATED["run"].items() if key != "defining_flags"}
    config = render_block({**SATURATED, "run": run}).splitlines()[2]
    assert config == ("  config   --model-path /models/Kimi-K2.5 --tp-size 8 --mem-fraction-static 0.88 "
                      "--enable-hierarchical-cache --hicache-size 48 --enable-metrics")


def test_numbers_older_than_the_run_say_so() -> None:
    starting = {**SATURATED, "run": {**SATURATED["run"], "started_at": SATURATED["as_of"] - 2.0,
                                      "ready_at": None, "state": "starting"}}
    assert render_block(starting).splitlines()[3].endswith("queue 79  (3 s ago, before this run started)")
