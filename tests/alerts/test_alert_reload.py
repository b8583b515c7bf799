"""AlertEngine.reconfigure and AlertService.reconfigure (what a config reload calls) over a real store:
kept hosts carry their states on under the new rules, removed hosts' open alerts resolve once, a
webhook a reload sets starts being used."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvwatch.app.alerts import start_alerting
from kvwatch.app.config import ServerConfig
from tests.alerts.recorded import T0, Rig, every
from tests.alerts.test_alert_api import saturate, services_for, wait_for
from tests.alerts.test_alert_webhook import Receiver

RULE = "token_usage_high"


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    return Rig(tmp_path / "kvwatch.db")


def test_a_firing_alert_carries_on_under_new_thresholds(rig: Rig) -> None:
    rig.play("token_usage", every(T0, [0.97] * 40))
    before = rig.alert(RULE)
    assert before is not None and before["state"] == "firing"
    rig.alerts_table = {RULE: {"fire_at": 0.99, "stay_at": 0.96}}
    assert rig.engine.reconfigure([rig.host], {rig.host.name: rig.rules()}) == []
    rig.play("token_usage", every(T0 + 200, [0.97] * 20))
    after = rig.alert(RULE)
    assert after is not None
    assert (after["state"], after["since"], after["seq"]) == ("firing", before["since"], before["seq"])
    assert rig.of(RULE) == ["pending", "firing"]  # nothing new went to the page or the webhook
    # The new stay_at applies: 0.95 held the old 0.90, not 0.96; keep_firing_for (300 s) later it resolves.
    rig.play("token_usage", every(T0 + 300, [0.95] * 70))
    assert rig.of(RULE) == ["pending", "firing", "clearing", "resolved"]
    assert rig.changes[-1].alert.since == T0 + 300 + 300
    # A restart after the reload finds the state the reload left.
    rig.engine.flush()
    assert rig.new_engine().snapshot(retention_s=float("inf"))[0]["since"] == T0 + 600


def test_a_removed_host_resolves_once_and_is_no_longer_evaluated(rig: Rig) -> None:
    rig.play("token_usage", every(T0, [0.97] * 40))
    rig.samples("queue_req", every(T0, [1.0] * 10))
    changes = rig.engine.reconfigure([], {})
    assert [(c.alert.rule, c.previous, c.alert.state, c.alert.note) for c in changes] == [
        (RULE, "firing", "resolved", "host removed from the config")]
    assert changes[0].alert.since == T0 + 195  # the last log time it had seen
    assert changes[0].payload["summary"].endswith("(host removed from the config)")
    rig.samples("token_usage", every(T0 + 200, [0.99] * 40))
    rig.clock.advance(3600)  # long enough for the wall-clock rules (stale log, outputs) to fire
    assert rig.engine.evaluate() == []
    assert rig.engine.snapshot() == []
    # Added back by a later reload: it resumes after its watermark, and the saturation fires anew.
    rig.engine.reconfigure([rig.host], {rig.host.name: rig.rules()})
    rig.engine.evaluate()
    assert rig.of(RULE) == ["pending", "firing", "resolved", "pending", "firing"]
    assert rig.changes[-1].alert.since == T0 + 200 + 120


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.close()


def test_a_webhook_set_by_a_reload_is_used_and_one_removed_is_not(tmp_path: Path, receiver: Receiver) -> None:
    services = services_for(tmp_path)  # no webhook at start
    alerting = services.alerts = start_alerting(services, interval=0.1)
    try:
        with_hook = services.config.model_copy(update={"server": ServerConfig(webhook=receiver.url)})
        alerting.reconfigure(with_hook)
        saturate(services.store)
        wait_for(lambda: receiver.states() == ["firing"])
        assert alerting.delivery is not None and alerting.delivery.target == "http://127.0.0.1"
        alerting.reconfigure(services.config)
        assert alerting.delivery is None
        changes = alerting.reconfigure(services.config.model_copy(update={"hosts": ()}))  # resolves gpu1's alert
        assert [c.alert.state for c in changes if c.alert.rule == RULE] == ["resolved"]
        time.sleep(1.0)  # a sender, had one been left running, would have posted by now
        assert receiver.states() == ["firing"]
    finally:
        services.stop()
