"""The headline rule over recorded token-usage series: `for`, debounce, hysteresis, keep_firing_for."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kvwatch.app.alerts.delivery import notifies
from tests.alerts.recorded import T0, Rig, every

RULE = "token_usage_high"


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    return Rig(tmp_path / "kvwatch.db")


def test_saturation_fires_once_for_has_passed_in_log_time(rig: Rig) -> None:
    # Log time runs 5 s per sample while the wall clock moves 1 s: `for` is measured on the log.
    rig.play("token_usage", every(T0, [0.5] * 12 + [0.97] * 40))
    assert rig.of(RULE) == ["pending", "firing"]
    pending, firing = (c.alert for c in rig.changes if c.alert.rule == RULE)
    assert pending.since == T0 + 60
    assert firing.since == T0 + 60 + 120
    assert firing.value == pytest.approx(0.97)


@pytest.mark.parametrize("spike_s", [60, 115])
def test_spike_shorter_than_for_never_fires(rig: Rig, spike_s: int) -> None:
    # 115 s is inside the 30 s debounce of a 120 s `for`: pending survives, but no sample >= 0.95
    # comes after the `for` has passed, so it still never fires.
    spike = [0.97] * (spike_s // 5)
    rig.play("token_usage", every(T0, [0.5] * 12 + spike + [0.5] * 60))
    assert rig.of(RULE) == ["pending", "inactive"]
    assert rig.state(RULE) == "inactive"


def test_spike_in_a_backlog_never_fires_either(rig: Rig) -> None:
    rig.samples("token_usage", every(T0, [0.5] * 12 + [0.97] * 23 + [0.5] * 60))
    rig.engine.evaluate()
    assert "firing" not in rig.of(RULE)


def test_values_hovering_around_the_threshold_fire_once_and_do_not_flap(rig: Rig) -> None:
    noise = random.Random(7)
    hovering = [round(noise.uniform(0.92, 0.97), 3) for _ in range(360)]  # 30 min of log time
    rig.play("token_usage", every(T0, [0.5] * 6 + hovering + [0.5] * 80))
    states = rig.of(RULE)
    # Pending may start over while usage is mostly below 0.95 (nobody is told about pending);
    # once firing, nothing changes until usage really falls.
    assert [s for s in states if s in ("firing", "resolved")] == ["firing", "resolved"]
    assert states[states.index("firing") + 1 :] == ["clearing", "resolved"]
    resolved = next(c.alert for c in rig.changes if c.alert.state == "resolved")
    # It resolves keep_firing_for (300 s) after the last sample at or above stay_at (0.90).
    last_high = T0 + (6 + 360 - 1) * 5
    assert resolved.since == pytest.approx(last_high + 5 + 300)


def test_alternating_just_below_and_above_fires_once(rig: Rig) -> None:
    rig.play("token_usage", every(T0, [0.94, 0.96] * 120))
    assert rig.of(RULE) == ["pending", "firing"]


def test_hysteresis_keeps_firing_between_stay_and_fire_thresholds(rig: Rig) -> None:
    rig.play("token_usage", every(T0, [0.97] * 30 + [0.91] * 120))  # 10 min at 0.91
    assert rig.of(RULE) == ["pending", "firing"]
    alert = rig.alert(RULE)
    assert alert is not None
    assert alert["value"] == pytest.approx(0.91)


def test_dips_below_stay_shorter_than_keep_firing_for_do_not_resolve(rig: Rig) -> None:
    dips = ([0.85] * 24 + [0.93] * 6) * 6  # 2 min dips below 0.90 within a 5 min keep_firing_for
    rig.play("token_usage", every(T0, [0.97] * 30 + dips))
    # Each dip is shown as clearing (the value is below stay_at), each return as firing since the
    # first fire; the webhook hears none of it.
    assert rig.of(RULE) == ["pending", "firing"] + ["clearing", "firing"] * 6
    assert {c.alert.since for c in rig.changes if c.alert.state == "firing"} == {T0 + 120}
    assert [c.alert.state for c in rig.changes if notifies(c)] == ["firing"]


def test_resolved_then_saturated_again_is_a_new_firing(rig: Rig) -> None:
    rig.play("token_usage", every(T0, [0.97] * 30 + [0.5] * 70 + [0.97] * 30))
    assert rig.of(RULE) == ["pending", "firing", "clearing", "resolved", "pending", "firing"]
    seqs = [c.alert.seq for c in rig.changes if c.alert.rule == RULE]
    assert seqs == [1, 2, 3, 4, 5, 6]


def test_a_backlog_plays_out_in_log_order_and_is_marked_late(rig: Rig) -> None:
    # Ten minutes read at once after a reconnect: saturated, then fine again.
    rig.samples("token_usage", every(T0, [0.97] * 40 + [0.5] * 80))
    rig.engine.evaluate()
    assert rig.of(RULE) == ["pending", "firing", "clearing", "resolved"]
    assert all(c.alert.late for c in rig.changes if c.alert.rule == RULE)
    rig.play("token_usage", every(T0 + 600, [0.97] * 40))  # live again
    assert rig.of(RULE)[-1] == "firing"
    assert rig.changes[-1].alert.late is False


def test_first_evaluation_looks_back_ten_minutes_not_the_whole_history(rig: Rig) -> None:
    # Saturated a day ago, then normal; kvwatch starts now: nothing from yesterday fires.
    rig.samples("token_usage", every(T0 - 86_400, [0.99] * 100))
    rig.samples("token_usage", every(T0, [0.4] * 200))
    rig.engine.evaluate()
    assert rig.of(RULE) == []


def test_kvwatch_started_on_a_saturated_server_fires_at_once(rig: Rig) -> None:
    rig.samples("token_usage", every(T0, [0.98] * 60))  # the last 5 min, all saturated
    rig.engine.evaluate()
    assert rig.of(RULE) == ["pending", "firing"]
    assert rig.state(RULE) == "firing"


def test_configured_thresholds_and_durations_apply(tmp_path: Path) -> None:
    rig = Rig(tmp_path / "kvwatch.db", alerts_table={RULE: {"fire_at": 0.99, "stay_at": 0.98, "for": "30s"}})
    rig.play("token_usage", every(T0, [0.97] * 40 + [0.995] * 8))
    assert rig.of(RULE) == ["pending", "firing"]
    assert rig.changes[-1].alert.since == T0 + 40 * 5 + 30


def test_a_disabled_rule_never_fires(tmp_path: Path) -> None:
    rig = Rig(tmp_path / "kvwatch.db", alerts_table={RULE: {"enabled": False}})
    rig.play("token_usage", every(T0, [0.99] * 60))
    assert rig.of(RULE) == []


def test_a_debounce_of_zero_is_no_debounce(tmp_path: Path) -> None:
    """`debounce = 0` is a valid setting; it left each sample an empty window and every evaluation failed."""
    rig = Rig(tmp_path / "kvwatch.db", alerts_table={RULE: {"debounce": 0, "for": 0}})
    rig.play("token_usage", every(T0, [0.5, 0.97, 0.97, 0.5]))
    assert rig.of(RULE) == ["firing", "clearing"]
