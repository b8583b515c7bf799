"""A restart keeps the prediction it was made with: asked before the new run is announced (from the
flags the controller knows run now to the new ones), kept under the new run's id, shown with the
operation; a failing prediction is logged and the restart goes on without one."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kvwatch.app.controller.restart import HostController
from kvwatch.app.flags.schema import FlagValue
from tests.controller.support import MemorySinks, free_port, make_config


class RecordingForecast:
    """The Forecast protocol in memory: answers from the flags it is given, records what it keeps."""

    def __init__(self, sinks: MemorySinks, fail: bool = False) -> None:
        self.sinks, self.fail = sinks, fail
        self.asked: list[tuple[dict[str, FlagValue], dict[str, FlagValue], int]] = []
        self.kept: list[tuple[str, str | None, dict[str, Any]]] = []
        self.lock = threading.Lock()

    def predict(self, from_flags: dict[str, FlagValue], to_flags: dict[str, FlagValue]) -> dict[str, Any] | None:
        if self.fail:
            raise RuntimeError("the store is gone")
        with self.lock:
            self.asked.append((dict(from_flags), dict(to_flags), len(self.sinks.started)))
        step = float(to_flags["mem-fraction-static"]) - float(from_flags.get("mem-fraction-static", 0.85))
        return {"max_total_num_tokens": int(116_000 * (1 + step * 10)), "risks": []}

    def keep(self, run_id: str, based_on: str | None, prediction: dict[str, Any]) -> None:
        with self.lock:
            self.kept.append((run_id, based_on, prediction))


def test_the_new_run_keeps_the_prediction_it_was_made_with(
        tmp_path: Path, controllers: Callable[..., HostController], sinks: MemorySinks) -> None:
    forecast = RecordingForecast(sinks)
    controller = controllers(make_config(tmp_path, free_port()), sinks=sinks, forecast=forecast)
    first = controller.begin("test", flags={"mem-fraction-static": 0.85})
    assert controller.wait(120) is first and first.outcome == "ok", first.public()
    second = controller.begin("test", flags={"mem-fraction-static": 0.88})
    assert controller.wait(120) is second and second.outcome == "ok", second.public()
    # Asked before each announce (no run started yet / one started), from the flags that ran to the new ones.
    assert [started for _, _, started in forecast.asked] == [0, 1]
    assert forecast.asked[1][0]["mem-fraction-static"] == 0.85 and forecast.asked[1][1]["mem-fraction-static"] == 0.88
    assert [run for run, _, _ in forecast.kept] == [first.run_id, second.run_id]
    # Without a run registry the controller's current run is the one it started last.
    assert forecast.kept[1][1] == first.run_id
    assert second.public()["prediction"] == forecast.kept[1][2]


def test_a_failing_prediction_does_not_stop_the_restart(
        tmp_path: Path, controllers: Callable[..., HostController], sinks: MemorySinks) -> None:
    forecast = RecordingForecast(sinks, fail=True)
    controller = controllers(make_config(tmp_path, free_port()), sinks=sinks, forecast=forecast)
    op = controller.begin("test", flags={"mem-fraction-static": 0.85})
    assert controller.wait(120) is op and op.outcome == "ok", op.public()
    assert op.prediction is None and forecast.kept == []
    assert [a.outcome for a in sinks.audits] == ["ok"]
