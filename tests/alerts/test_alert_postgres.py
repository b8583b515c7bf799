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
