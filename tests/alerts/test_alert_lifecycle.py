"""Data stopping, kvwatch restarting and the controller muting a host: what happens to open alerts."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.alerts.recorded import T0, Rig, every

RULE, STALE = "token_usage_high", "server_log_stale"


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    return Rig(tmp_path / "kvwatch.db")


def saturate(rig: Rig, start: float = T0, samples: int = 40) -> None:
    rig.play("token_usage", every(start, [0.97] * samples))
    assert rig.state(RULE) == "firing"


def test_data_stopping_raises_stale_and_never_resolves(rig: Rig) -> None:
    saturate(rig)
    for _ in range(30):  # 15 minutes of wall time, and not one new line
        rig.clock.advance(30)
        rig.engine.evaluate()
    assert rig.state(RULE) == "firing"
    assert rig.of(RULE) == ["pending", "firing"]
    assert rig.of(STALE) == ["firing"]
    stale = rig.alert(STALE)
    assert stale is not None
    assert stale["value"] >= 120
    assert "no new server log records" in stale["summary"]


def test_fresh_data_ends_stale_and_only_fresh_data_resolves(rig: Rig) -> None:
    saturate(rig)
    rig.clock.advance(200)
    rig.engine.evaluate()
    assert rig.of(STALE) == ["firing"]
    # The log resumes with the cache no longer full: stale resolves at once, the usage alert after
    # keep_firing_for (300 s) of log time.
    rig.play("token_usage", every(T0 + 400, [0.4] * 70))
    assert rig.of(STALE) == ["firing", "resolved"]
    assert rig.of(RULE) == ["pending", "firing", "clearing", "resolved"]
    assert rig.changes[-1].alert.since == T0 + 400 + 300


def test_stale_is_on_the_wall_clock_so_a_slow_log_is_not_stale(rig: Rig) -> None:
    rig.play("token_usage", every(T0, [0.3] * 20, step=60), wall_step=60)  # a line a minute
    assert rig.of(STALE) == []


def test_restart_keeps_a_firing_alert_firing_without_a_new_change(rig: Rig) -> None:
    saturate(rig)
    before = rig.alert(RULE)
    assert before is not None
    count = len(rig.changes)
    rig.engine = rig.new_engine()  # kvwatch restarted: a new engine on the same database
    after = rig.alert(RULE)
    assert after is not None
    assert (after["state"], after["since"], after["seq"]) == ("firing", before["since"], before["seq"])
    rig.play("token_usage", every(T0 + 200, [0.93] * 30))
    assert rig.state(RULE) == "firing"
    assert len(rig.changes) == count


def test_restart_mid_pending_keeps_the_for_timer(rig: Rig) -> None:
    rig.play("token_usage", every(T0, [0.97] * 12))  # 55 s pending
    assert rig.state(RULE) == "pending"
    rig.engine = rig.new_engine()
    rig.play("token_usage", every(T0 + 60, [0.97] * 14))
    firing = [c.alert for c in rig.changes if c.alert.state == "firing"]
    assert [a.since for a in firing] == [T0 + 120]


def test_restart_after_a_crash_without_flush_replays_to_the_same_state(rig: Rig) -> None:
    saturate(rig)
    rig.play("token_usage", every(T0 + 200, [0.5] * 80))
    assert rig.of(RULE)[-1] == "resolved"
    count = len(rig.changes)
    rig.engine = rig.new_engine()  # the old one never flushed its watermark since the change
    rig.engine.evaluate()
    assert len(rig.changes) == count
    assert rig.state(RULE) == "resolved"


def test_mute_freezes_the_host_and_unmute_re_arms_it(rig: Rig) -> None:
    saturate(rig)
    rig.engine.mute("gpu1", reason="controller restart")
    # The controller stops the server: usage drops to zero, the server logs a crash, the log goes
    # quiet for long enough to be stale. None of it is an alert.
    rig.event(T0 + 205, "crash")
    rig.play("token_usage", every(T0 + 210, [0.0] * 10), wall_step=30)
    assert rig.of(RULE) == ["pending", "firing"]
    assert rig.of(STALE) == rig.of("server_errors") == []
    assert rig.alert(RULE)["muted"] is True  # type: ignore[index]

    rearm = rig.engine.unmute("gpu1")
    assert [(c.alert.rule, c.previous, c.alert.state) for c in rearm] == [(RULE, "firing", "resolved")]
    assert "re-armed after controller restart" in rearm[0].payload["summary"]
    # The new run is judged from scratch: still saturated means a new alert after a full `for`.
    rig.play("token_usage", every(T0 + 300, [0.98] * 30))
    assert rig.of(RULE) == ["pending", "firing", "resolved", "pending", "firing"]
    assert rig.changes[-1].alert.since == T0 + 300 + 120
    assert rig.of("server_errors") == []


def test_a_mute_survives_restart_and_runs_out_by_itself(rig: Rig) -> None:
    saturate(rig)
    rig.engine.mute("gpu1", until=rig.clock() + 120)
    rig.engine = rig.new_engine()
    assert rig.engine.muted("gpu1") is not None
    rig.clock.advance(60)
    assert rig.engine.evaluate() == []
    rig.clock.advance(61)
    changes = rig.engine.evaluate()
    assert [(c.alert.rule, c.alert.state) for c in changes] == [(RULE, "resolved")]
    assert rig.engine.muted("gpu1") is None


def test_a_mute_without_end_still_ends(rig: Rig) -> None:
    rig.engine.mute("gpu1")
    mute = rig.engine.muted("gpu1")
    assert mute is not None
    assert mute.until == pytest.approx(rig.clock() + 1800)


def test_mute_of_an_unknown_host_is_an_error(rig: Rig) -> None:
    with pytest.raises(KeyError, match="nohost"):
        rig.engine.mute("nohost")


def test_a_kvwatch_down_for_hours_catches_up_only_the_last_hour(rig: Rig) -> None:
    rig.play("token_usage", every(T0, [0.5] * 20))
    rig.engine = rig.new_engine()  # down for three hours of log; the collector then catches up
    old_episode = [0.5] * 100 + [0.97] * 60 + [0.5] * 200  # fires and resolves in the first hour
    recent_episode = [0.5] * 1700 + [0.97] * 60  # saturated again in the last 5 min
    rig.samples("token_usage", every(T0 + 100, old_episode + [0.5] * 300 + recent_episode))
    rig.engine.evaluate()
    assert rig.of(RULE) == ["pending", "firing"]
    since = rig.changes[-1].alert.since
    assert since is not None
    assert since > T0 + 100 + 5 * (360 + 300 + 1700)


def test_the_re_arm_point_survives_a_restart(rig: Rig) -> None:
    rig.play("token_usage", every(T0, [0.5] * 10))
    rig.engine.mute("gpu1")
    rig.event(T0 + 55, "oom")  # logged by the old server while it was being stopped
    rig.samples("token_usage", [(T0 + 60, 0.0)])
    rig.engine.unmute("gpu1")
    rig.engine = rig.new_engine()
    rig.play("token_usage", every(T0 + 65, [0.5] * 10))
    assert rig.of("server_errors") == []
