"""The host's cap of distinct series (app/pipeline/bounds.py) is the last guard against a log that
invents series; reaching it raises `series_cap_reached`, it is not silence."""

from __future__ import annotations

from pathlib import Path

from kvwatch.app.pipeline.bounds import MAX_SERIES
from kvwatch.app.pipeline.rows import live_rows
from kvwatch.app.runner import build_services
from kvwatch.parsers import Record
from tests.alerts.recorded import T0, Rig
from tests.app.slice_helpers import local_config


def test_a_host_past_its_series_cap_raises_the_alert_with_the_dropped_count(tmp_path: Path) -> None:
    services = build_services(local_config(tmp_path))
    try:
        collector = services.collectors["local"]  # the app's collector, not started: its sink and health
        rig = Rig(tmp_path / "alerts.db")
        rig.health = collector.health
        rig.samples("token_usage", [(T0, 0.5)])
        rig.engine.evaluate()
        assert rig.state("series_cap_reached") == "inactive"
        # Field names of a field name's shape, each a new series: more than the cap allows.
        wide: list[Record] = [
            {"kind": "decode", "line": n, "ts": "2026-02-24T12:49:14", "tags": {}, f"made up {n}x": 1}
            for n in range(MAX_SERIES + 10)
        ]
        live_rows(wide, collector.sink.live, "server_log", "/log", now=T0)
        refused = collector.sink.live.bounds.as_dict()["samples"]
        assert refused > 0 and collector.health.series_refused == refused
        rig.engine.evaluate()
        assert rig.of("series_cap_reached") == ["firing"]
        alert = rig.alert("series_cap_reached")
        assert alert is not None and f"{refused} samples of new series dropped" in alert["summary"]
    finally:
        services.stop()
