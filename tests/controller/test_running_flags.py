"""A server kvwatch did not start, in the launch line's terms (app.controller.running), on literal flags
as the run registry keeps them (SGLang's logged server_args, names with dashes)."""

from __future__ import annotations

from kvwatch.app.controller.running import running_flags

LAUNCH = {"model-path": "/models/Kimi-K2.5", "tp-size": 8, "mem-fraction-static": 0.88,
          "enable-hierarchical-cache": True, "hicache-size": 48, "host": "127.0.0.1", "port": 30000}
RUN = {"model-path": "/models/Kimi-K2.5", "tp-size": 8, "mem-fraction-static": 0.85,
       "enable-hierarchical-cache": False, "hicache-size": 0.0, "host": "0.0.0.0", "port": 31000,
       "kv-cache-dtype": "auto", "max-total-tokens": None, "schedule-policy": "fcfs"}


def test_launch_flags_take_the_run_values_and_a_switch_it_has_off_is_left_out() -> None:
    flags = running_flags(LAUNCH, RUN)
    assert flags["mem-fraction-static"] == 0.85
    assert flags["hicache-size"] == 0.0
    assert "enable-hierarchical-cache" not in flags
    assert flags["tp-size"] == 8


def test_guarded_flags_keep_the_launch_value() -> None:
    flags = running_flags(LAUNCH, RUN)
    assert flags["host"] == "127.0.0.1" and flags["port"] == 30000 and flags["model-path"] == "/models/Kimi-K2.5"


def test_the_presets_flags_join_the_vocabulary_and_nothing_else_does() -> None:
    presets = [{"kv-cache-dtype": "fp8_e4m3", "mem-fraction-static": 0.9}, {"max-total-tokens": 100000}]
    fp8_run = {**RUN, "kv-cache-dtype": "fp8_e4m3"}
    flags = running_flags(LAUNCH, fp8_run, presets)
    assert flags["kv-cache-dtype"] == "fp8_e4m3"
    assert "max-total-tokens" not in flags  # the run had no value for it
    assert "schedule-policy" not in flags  # not a flag this host tunes
    assert list(flags)[:len(LAUNCH) - 1] == [k for k in LAUNCH if k != "enable-hierarchical-cache"]


def test_a_launch_flag_the_run_does_not_know_keeps_its_launch_value() -> None:
    assert running_flags({"new-flag": 3}, {}) == {"new-flag": 3}
