"""Run-scoped rules: a server run that ends takes its alerts with it (`run_ended`); the next run is
judged from zero. Rules about sources and the host carry on across runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvwatch.app.alerts.rules import DEFAULT_RULES, KIND_SCOPES
from kvwatch.app.alerts.signals import SIGNALS
from kvwatch.app.alerts.watches import WATCHES
from kvwatch.collectors.health import HostHealth
from tests.alerts.recorded import T0, Rig, every

RULE = "token_usage_high"


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    return Rig(tmp_path / "kvwatch.db")


def saturate(rig: Rig) -> None:
    rig.new_run(T0 - 60)
    rig.play("token_usage", every(T0, [0.97] * 40))
    assert rig.state(RULE) == "firing"


def test_every_kind_declares_its_scope_and_the_server_state_rules_are_run_scoped() -> None:
    assert set(KIND_SCOPES) == set(SIGNALS) | set(WATCHES)
    scoped = {rule.name for rule in DEFAULT_RULES if rule.run_scoped}
    assert scoped == {"token_usage_high", "queue_growing", "retractions", "server_errors", "throughput_drop"}


def test_a_new_run_resolves_a_firing_alert_within_one_evaluation_with_run_ended(rig: Rig) -> None:
    saturate(rig)
    count = len(rig.changes)
    rig.new_run(T0 + 300, {"kv_cache_dtype": "fp8_e5m2"})
    rig.samples("token_usage", every(T0 + 305, [0.69] * 3))
    rig.engine.evaluate()  # one evaluation
    assert [(c.previous, c.alert.state) for c in rig.changes[count:]] == [("firing", "resolved")]
    alert = rig.alert(RULE)
    assert alert is not None
    assert (alert["state"], alert["resolved_reason"], alert["since"]) == ("resolved", "run_ended", T0 + 300)
    assert "resolved: the server run ended" in alert["summary"]
    assert alert["run_id"] == "gpu1-20260224T124814"  # the run it fired on


def test_the_new_run_starts_from_zero_pending_again_for_the_whole_for(rig: Rig) -> None:
    saturate(rig)
    rig.new_run(T0 + 300)
    rig.play("token_usage", every(T0 + 305, [0.98] * 30))
    assert rig.of(RULE) == ["pending", "firing", "resolved", "pending", "firing"]
    assert rig.changes[-1].alert.since == T0 + 305 + 120
    assert rig.alert(RULE)["run_id"] == "gpu1-20260224T125414"  # type: ignore[index]


def test_a_pending_alert_of_the_old_run_does_not_carry_its_for_timer_over(rig: Rig) -> None:
    rig.new_run(T0 - 60)
    rig.play("token_usage", every(T0, [0.97] * 20))  # 95 s pending of a 120 s `for`
    assert rig.state(RULE) == "pending"
    rig.new_run(T0 + 100)
    rig.play("token_usage", every(T0 + 102, [0.97] * 10))  # 45 s more: old and new together pass `for`
    assert rig.of(RULE) == ["pending", "inactive", "pending"]


def test_retractions_of_the_old_run_never_fire_on_a_run_without_any(rig: Rig) -> None:
    rig.new_run(T0 - 60)
    rig.play("token_usage", every(T0, [0.6] * 12))
    rig.event(T0 + 62, "retract")
    rig.play("token_usage", every(T0 + 65, [0.6] * 4))
    assert rig.state("retractions") == "firing"
    rig.new_run(T0 + 90)
    rig.play("token_usage", every(T0 + 95, [0.3] * 3))
    retractions = rig.alert("retractions")
    assert retractions is not None
    assert (retractions["state"], retractions["resolved_reason"]) == ("resolved", "run_ended")
    # A kvwatch started now, with no alert state of its own, looks back 10 min: not past the run's start.
    rig.store.delete_documents("alert", ["gpu1/retractions"])
    rig.engine = rig.new_engine()
    rig.play("token_usage", every(T0 + 110, [0.3] * 10))
    assert rig.state("retractions") == "inactive"


def test_a_host_rule_is_not_run_scoped(rig: Rig) -> None:
    saturate(rig)
    rig.health = HostHealth(state="reconnecting", last_error="connection refused", since=rig.clock())
    for _ in range(5):
        rig.clock.advance(30)
        rig.engine.evaluate()
    assert rig.state("host_unreachable") == "firing"
    rig.new_run(T0 + 300)
    rig.engine.evaluate()
    assert rig.state(RULE) == "resolved"
    assert rig.state("host_unreachable") == "firing"


def test_clearing_and_the_resolved_reason_survive_a_kvwatch_restart(rig: Rig) -> None:
    saturate(rig)
    rig.play("token_usage", every(T0 + 200, [0.5] * 4))
    clearing = rig.alert(RULE)
    assert clearing is not None
    assert (clearing["state"], clearing["resolves_at"]) == ("clearing", T0 + 200 + 300)
    rig.engine = rig.new_engine()
    again = rig.alert(RULE)
    assert again is not None
    assert (again["state"], again["since"], again["resolves_at"]) == ("clearing", T0 + 200, T0 + 500)
    rig.new_run(T0 + 250)
    rig.engine.evaluate()
    rig.engine = rig.new_engine()
    resolved = rig.alert(RULE)
    assert resolved is not None
    assert (resolved["state"], resolved["resolved_reason"]) == ("resolved", "run_ended")


def test_an_event_count_at_zero_is_clearing_never_firing(rig: Rig) -> None:
    rig.new_run(T0 - 60)
    rig.event(T0 + 2, "retract")
    rig.play("token_usage", every(T0 + 5, [0.6] * 62))  # out of the 300 s window at T0+302
    alert = rig.alert("retractions")
    assert alert is not None
    assert (alert["state"], alert["value"]) == ("clearing", 0.0)
    assert alert["headline"].endswith("(0 events) (clearing — resolves in 4m55s)"), alert["headline"]
    firing = [c.payload for c in rig.changes if c.alert.rule == "retractions" and c.alert.state == "firing"]
    assert [p["value"] for p in firing] == [1.0]
