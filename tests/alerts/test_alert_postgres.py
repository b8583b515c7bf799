"""Alert states, mutes and the webhook outbox on the PostgreSQL store: a restart carries them on."""

from __future__ import annotations

import pytest

from tests.alerts.recorded import T0, Rig, every

pytestmark = pytest.mark.postgres


def test_states_and_mutes_survive_a_restart_on_postgres(pg_url: str) -> None:
    rig = Rig(pg_url)
    rig.play("token_usage", every(T0, [0.97] * 40))
    assert rig.of("token_usage_high") == ["pending", "firing"]
    rig.engine.mute("gpu1", until=rig.clock() + 600)
    rig.engine = rig.new_engine()
    alert = rig.alert("token_usage_high")
    assert alert is not None
    assert (alert["state"], alert["since"], alert["muted"]) == ("firing", T0 + 120, True)
    changes = rig.engine.unmute("gpu1")
    assert [(c.alert.rule, c.alert.state) for c in changes] == [("token_usage_high", "resolved")]
    rig.engine = rig.new_engine()
    assert rig.engine.muted("gpu1") is None
    rig.play("token_usage", every(T0 + 300, [0.97] * 30))
    assert rig.of("token_usage_high")[-2:] == ["pending", "firing"]
    rig.store.close()


def test_clearing_and_run_ended_survive_a_restart_on_postgres(pg_url: str) -> None:
    rig = Rig(pg_url)
    rig.new_run(T0 - 60)
    rig.play("token_usage", every(T0, [0.97] * 40))
    rig.play("token_usage", every(T0 + 200, [0.5] * 4))
    rig.engine = rig.new_engine()
    alert = rig.alert("token_usage_high")
    assert alert is not None
    assert (alert["state"], alert["since"], alert["resolves_at"]) == ("clearing", T0 + 200, T0 + 500)
    rig.new_run(T0 + 250)
    rig.engine.evaluate()
    rig.engine = rig.new_engine()
    alert = rig.alert("token_usage_high")
    assert alert is not None
    assert (alert["state"], alert["resolved_reason"], alert["since"]) == ("resolved", "run_ended", T0 + 250)
    rig.store.close()
