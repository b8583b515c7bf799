"""The other default rules: server events, throughput, queue, stale client log, outputs, SSH health."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvwatch.app.config import HostConfig
from kvwatch.collectors.health import HostHealth
from tests.alerts.recorded import HOST, T0, Rig, every


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    return Rig(tmp_path / "kvwatch.db")


def test_a_retraction_fires_at_once_and_resolves_as_the_log_moves_on(rig: Rig) -> None:
    rig.play("token_usage", every(T0, [0.6] * 12))
    rig.event(T0 + 62, "retract")
    rig.play("token_usage", every(T0 + 65, [0.6] * 60))  # 5 min on
    assert rig.of("retractions") == ["firing"]
    alert = rig.alert("retractions")
    assert alert is not None
    assert alert["since"] == T0 + 62
    assert "retract" in alert["summary"]
    # Out of the 300 s window at T0+362, then keep_firing_for 300 s more of log time.
    rig.play("token_usage", every(T0 + 365, [0.6] * 61))
    assert rig.of("retractions") == ["firing", "clearing", "resolved"]
    assert rig.changes[-1].alert.since == T0 + 365 + 300


def test_a_retraction_with_no_further_log_lines_stays_firing(rig: Rig) -> None:
    rig.event(T0, "retract")
    rig.engine.evaluate()
    rig.samples("token_usage", [(T0 + 1, 0.9)])
    for _ in range(20):
        rig.clock.advance(60)
        rig.engine.evaluate()
    assert rig.state("retractions") == "firing"


@pytest.mark.parametrize("event", ["exception", "oom", "watchdog_timeout", "crash"])
def test_server_errors_page_on_each_kind(rig: Rig, event: str) -> None:
    rig.samples("token_usage", [(T0, 0.5)])
    rig.event(T0 + 3, event)
    rig.engine.evaluate()
    assert rig.of("server_errors") == ["firing"]
    alert = rig.alert("server_errors")
    assert alert is not None
    assert alert["severity"] == "page"
    assert event in alert["detail"]
    assert rig.of("retractions") == []


def test_throughput_drop_below_the_steady_state_median_fires(rig: Rig) -> None:
    rig.event(T0, "ready")
    steady = [1000 + (i % 7) * 20 for i in range(120)]  # 10 min, warm-up included
    rig.play_lines(T0 + 5, [line(tput, 100) for tput in steady])
    rig.play_lines(T0 + 605, [line(300, 100)] * 40)  # a 70% drop, still 100 running
    assert rig.of("throughput_drop") == ["pending", "firing"]
    alert = rig.alert("throughput_drop")
    assert alert is not None
    assert "steady-state median 10" in alert["detail"]


def test_throughput_falling_as_the_run_drains_is_not_a_drop(rig: Rig) -> None:
    rig.event(T0, "ready")
    rig.play_lines(T0 + 5, [line(1000, 100)] * 120 + [line(150, 10)] * 60)
    assert rig.of("throughput_drop") == []


def test_throughput_needs_enough_steady_samples_first(rig: Rig) -> None:
    rig.event(T0, "ready")
    rig.play_lines(T0 + 5, [line(1000, 100)] * 62 + [line(100, 100)] * 40)  # 5 s of steady state
    assert rig.of("throughput_drop") == []


def line(tput: float, running: float) -> dict[str, float]:
    return {"token_usage": 0.8, "gen_throughput": tput, "running_req": running}


def test_queue_growing_while_the_cache_is_full(rig: Rig) -> None:
    points = list(range(60))
    rig.samples("token_usage", every(T0, [0.96] * 60))
    rig.play("queue_req", every(T0, [q * 4 for q in points]))
    assert rig.of("queue_growing") == ["pending", "firing"]
    alert = rig.alert("queue_growing")
    assert alert is not None
    assert "waiting" in alert["summary"]


def test_a_queue_with_room_in_the_cache_is_not_an_alert(rig: Rig) -> None:
    rig.samples("token_usage", every(T0, [0.6] * 60))
    rig.play("queue_req", every(T0, [q * 4 for q in range(60)]))
    assert rig.of("queue_growing") == []


def test_client_log_silent_while_outputs_grow_suggests_unbuffered_output(rig: Rig) -> None:
    rig.samples("client_done", [(T0, 10)], source="client_log")
    for minute in range(8):
        rig.samples("completions", [(rig.clock() + 1, 100 + minute * 50)], source="outputs")
        rig.samples("token_usage", [(T0 + minute * 60, 0.8)])
        rig.clock.advance(60)
        rig.engine.evaluate()
    assert rig.of("client_log_stale") == ["firing"]
    alert = rig.alert("client_log_stale")
    assert alert is not None
    assert "PYTHONUNBUFFERED=1" in alert["summary"]


def test_client_log_quiet_with_outputs_quiet_too_is_not_buffering(rig: Rig) -> None:
    for minute in range(8):
        rig.samples("token_usage", [(T0 + minute * 60, 0.8)])
        rig.clock.advance(60)
        rig.engine.evaluate()
    assert rig.of("client_log_stale") == []


def test_outputs_stalled_while_the_server_is_busy(rig: Rig) -> None:
    rig.samples("completions", [(rig.clock(), 500)], source="outputs")
    for minute in range(12):
        rig.samples("running_req", [(T0 + minute * 60, 64)])
        rig.samples("token_usage", [(T0 + minute * 60, 0.8)])
        rig.clock.advance(60)
        rig.engine.evaluate()
    assert rig.of("outputs_stalled") == ["firing"]


def test_outputs_not_stalled_once_the_target_is_reached(tmp_path: Path) -> None:
    host = HostConfig(name="gpu1", ssh="local", server_log="/l", outputs=("/o/*",), target_completions=500)
    rig = Rig(tmp_path / "kvwatch.db", host=host)
    rig.samples("completions", [(rig.clock(), 500)], source="outputs")
    for _ in range(12):
        rig.clock.advance(60)
        rig.engine.evaluate()
    assert rig.of("outputs_stalled") == []


def test_a_rejected_host_key_pages_and_only_a_working_connection_resolves_it(rig: Rig) -> None:
    rig.health = HostHealth()
    rig.health.set_state("failed", "host key rejected: gpu1 presented a different ssh-ed25519 key")
    rig.engine.evaluate()
    assert rig.of("host_key_changed") == ["firing"]
    assert rig.of("host_unreachable") == []
    rig.engine = rig.new_engine()  # kvwatch restarted with the same known_hosts
    rig.health = HostHealth()  # "connecting": no proof yet
    rig.engine.evaluate()
    assert rig.state("host_key_changed") == "firing"
    rig.health.set_state("up")
    rig.engine.evaluate()
    assert rig.of("host_key_changed") == ["firing", "resolved"]


def test_unreachable_for_two_minutes_pages_and_stale_is_inhibited(rig: Rig) -> None:
    rig.health = HostHealth()
    rig.health.set_state("up")
    rig.samples("token_usage", [(T0, 0.5)])
    rig.engine.evaluate()
    rig.health.set_state("reconnecting", "connection refused")
    for _ in range(10):
        rig.clock.advance(30)
        rig.engine.evaluate()
    assert rig.of("host_unreachable") == ["pending", "firing"]
    assert rig.of("server_log_stale") == []  # the connection is the news, not the log
    alert = rig.alert("host_unreachable")
    assert alert is not None
    assert "connection refused" in alert["summary"]
    rig.health.set_state("up")
    rig.engine.evaluate()
    assert rig.of("host_unreachable") == ["pending", "firing", "resolved"]


def test_a_short_reconnect_never_fires(rig: Rig) -> None:
    rig.health = HostHealth()
    rig.health.set_state("reconnecting", "timeout")
    rig.engine.evaluate()
    rig.clock.advance(30)
    rig.health.set_state("up")
    rig.engine.evaluate()
    assert rig.of("host_unreachable") == ["pending", "inactive"]


def test_host_without_client_log_or_outputs_skips_those_rules(tmp_path: Path) -> None:
    host = HostConfig(name="gpu1", ssh="local", server_log="/l")
    rig = Rig(tmp_path / "kvwatch.db", host=host)
    for _ in range(20):
        rig.clock.advance(60)
        rig.engine.evaluate()
    assert rig.of("client_log_stale") == rig.of("outputs_stalled") == []
    assert rig.of("server_log_stale") == ["firing"]
    assert HOST.client_log  # the default rig host has both
