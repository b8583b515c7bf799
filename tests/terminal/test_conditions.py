"""`--until`: the four conditions parsed from text, and met (or not) on literal answers."""

from __future__ import annotations

import pytest

from kvwatch.app.terminal.conditions import Condition, met, parse_condition, progress_note
from tests.terminal.answers import EMPTY, SATURATED, STEADY


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("steady", Condition("steady")),
        ("ready", Condition("ready")),
        ("alert", Condition("alert")),
        ("alert=token_usage_high", Condition("alert", rule="token_usage_high")),
        ("completions>=88000", Condition("completions", count=88000)),
        (" completions >= 5 ", Condition("completions", count=5)),
    ],
)
def test_conditions_parse_and_print_back(text: str, parsed: Condition) -> None:
    assert parse_condition(text) == parsed
    assert parse_condition(str(parsed)) == parsed


@pytest.mark.parametrize("text", ["", "stable", "alert=", "completions>5", "completions>=-1", "completions>=x"])
def test_anything_else_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"expected steady|needs a rule"):
        parse_condition(text)


def test_steady_needs_the_current_runs_window_to_be_steady() -> None:
    steady = Condition("steady")
    assert met(steady, SATURATED, STEADY)
    assert not met(steady, SATURATED, {**STEADY, "status": "settling"})
    assert not met(steady, SATURATED, {**STEADY, "run": "gpu1-older"})  # an earlier run's window
    assert not met(steady, SATURATED, None)
    assert not met(steady, EMPTY, None)


def test_ready_is_the_current_run_having_logged_ready() -> None:
    assert met(Condition("ready"), SATURATED)
    starting = {**SATURATED, "run": {**SATURATED["run"], "ready_at": None, "state": "starting"}}
    assert not met(Condition("ready"), starting)
    ended = {**SATURATED, "run": {**SATURATED["run"], "ended_at": 1.0, "state": "ended"}}
    assert not met(Condition("ready"), ended)
    assert not met(Condition("ready"), EMPTY)


def test_alert_is_a_firing_alert_of_the_rule_if_named() -> None:
    assert met(Condition("alert"), SATURATED)
    assert met(Condition("alert", rule="token_usage_high"), SATURATED)
    assert not met(Condition("alert", rule="queue_growing"), SATURATED)
    pending = {**SATURATED, "alerts": [{**SATURATED["alerts"][0], "state": "pending"}]}
    assert not met(Condition("alert"), pending)
    assert not met(Condition("alert"), EMPTY)


def test_steady_also_needs_every_row_compare_would_fill() -> None:
    steady = Condition("steady")
    unfilled = {**STEADY, "filled": False, "empty_rows": ["completion_rate"]}
    assert not met(steady, SATURATED, unfilled)
    assert met(steady, SATURATED, {**STEADY, "filled": True, "empty_rows": []})
    assert progress_note(steady, SATURATED, unfilled) == (
        "run gpu1-20260225T060000: steady no value yet for completion_rate")


def test_completions_at_or_above_the_count() -> None:
    assert met(Condition("completions", count=1804), SATURATED)
    assert not met(Condition("completions", count=1805), SATURATED)
    assert not met(Condition("completions", count=0), EMPTY)


def test_the_timeout_note_says_where_things_stand() -> None:
    assert progress_note(Condition("steady"), SATURATED, {**STEADY, "status": "settling",
                                                           "message": "gen_throughput still drifting"}) == (
        "run gpu1-20260225T060000: settling gen_throughput still drifting")
    assert progress_note(Condition("ready"), EMPTY, None) == "no run yet"
    assert progress_note(Condition("alert"), SATURATED, None) == "alerts: token_usage_high firing"
    assert progress_note(Condition("completions", count=9), SATURATED, None) == "completions: 1804"
    assert progress_note(Condition("completions", count=9), EMPTY, None) == "completions: None"
