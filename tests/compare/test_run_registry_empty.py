"""A host without any run yet: the registry answers an empty list (GET /api/runs used to answer 500)."""

from __future__ import annotations

from pathlib import Path

from kvwatch.app.runs.model import Run
from kvwatch.app.runs.registry import list_runs, merge_controller_runs
from kvwatch.app.store import open_store


def test_no_runs_is_an_empty_list(tmp_path: Path) -> None:
    assert merge_controller_runs([], []) == []
    store = open_store(str(tmp_path / "kvwatch.db"))
    try:
        assert list_runs(store, "gpu1") == []
    finally:
        store.close()


def _story_then_restart() -> tuple[list[Run], Run]:
    """A CI failure of 2026-12-07: the demo's story switched to 0.88 (logged 01:10:46, up at :47) and a
    campaign's restart was recorded at :50.35, 4.35 s later, inside the clocks' 5-s slack; its own
    server logged its start at :53."""
    flags = {"mem-fraction-static": 0.88}
    story = Run("story", "demo", 1846.0, flags=dict(flags), ready_at=1847.0)
    own = Run("own", "demo", 1853.0, flags=dict(flags), ready_at=1853.0)
    controller = Run("ctl", "demo", 1850.35, flags=dict(flags), source="controller")
    return [story, own], controller


def test_a_launch_already_up_when_the_restart_was_recorded_is_not_the_restarts() -> None:
    detected, controller = _story_then_restart()
    runs = merge_controller_runs(detected, [controller])
    assert [(r.id, r.started_at, r.ready_at, r.ended_at) for r in runs] == [
        ("story", 1846.0, 1847.0, 1850.35), ("ctl", 1850.35, 1853.0, None)]


def test_until_the_restarts_launch_is_logged_the_one_before_stands_in() -> None:
    detected, controller = _story_then_restart()
    runs = merge_controller_runs(detected[:1], [controller])
    assert [(r.id, r.ready_at, r.ended_at) for r in runs] == [("ctl", 1847.0, None)]
