"""A host reading a backlog is evaluated every CATCH_UP_EVERY_S of wall time, not every tick (each
pass reads the rules' windows again: at 1 s it cost as much CPU as the catch-up); once it has caught
up it is evaluated at the next tick, and what the backlog held is judged then."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvwatch.app.alerts.engine import CATCH_UP_EVERY_S
from kvwatch.collectors.health import HostHealth
from tests.alerts.recorded import T0, Rig, every

RULE = "token_usage_high"


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    health = HostHealth(state="up")
    health.source("server_log", "/logs/sglang.log").progress(1 << 20, 100 << 20)  # 1 MiB of 100 read
    return Rig(tmp_path / "kvwatch.db", health=health)


def test_a_backlog_is_evaluated_every_catch_up_interval_and_at_once_when_caught_up(rig: Rig) -> None:
    assert rig.health is not None and rig.health.catching_up
    reads: list[float] = []
    fresh = rig.engine._fresh[rig.host.name]
    original = fresh.refresh
    fresh.refresh = lambda store, host, now: (reads.append(now), original(store, host, now))[1]  # type: ignore[method-assign]
    rig.samples("token_usage", every(T0, [0.5] * 12 + [0.97] * 60))
    for _ in range(int(2 * CATCH_UP_EVERY_S)):  # 1 s ticks while it catches up
        rig.engine.evaluate()
        rig.clock.advance(1.0)
    assert len(reads) == 2  # the first tick, then one CATCH_UP_EVERY_S later
    rig.health.source("server_log", "/logs/sglang.log").progress(100 << 20, 100 << 20)
    assert not rig.health.catching_up
    rig.engine.evaluate()
    rig.clock.advance(1.0)
    rig.engine.evaluate()
    assert len(reads) == 4  # caught up: every tick again
    assert rig.state(RULE) == "firing"  # the backlog's saturation is judged like live lines
