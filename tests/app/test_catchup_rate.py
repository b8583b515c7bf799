"""No completion rate across a catch-up: the step read late is not averaged as if observed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import numpy as np

from kvwatch.app.api.derived import drop_unobserved, trailing_rate
from kvwatch.app.main import create_app
from kvwatch.app.pipeline.batches import CATCHUP_EVENT
from kvwatch.app.store.base import Batch, EventRow, Sample
from tests.app.slice_helpers import start_services


def test_rates_whose_window_spans_a_mark_are_dropped() -> None:
    t = np.array([0.0, 10.0, 20.0, 50.0, 60.0, 70.0, 80.0, 90.0])
    v = np.array([0.0, 10.0, 20.0, 900.0, 910.0, 920.0, 930.0, 940.0])  # read late at 50: +880
    rt, rv = trailing_rate(t, v, 30.0)
    assert rv.max() > 20  # the average over the gap
    kept_t, kept_v = drop_unobserved(rt, rv, t, 30.0, [50.0])
    assert kept_t.tolist() == [10.0, 20.0, 60.0, 70.0, 80.0, 90.0]  # 50's window starts at 20, before it
    assert kept_v.tolist() == [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]


def test_completion_rate_over_the_api_skips_the_catch_up(tmp_path: Path, serve_app: Any) -> None:
    services = start_services(tmp_path)
    path = str(tmp_path / "prepared" / "a" / "raw_responses.jsonl")
    before = [Sample("completions", "", 1000.0 + 10 * i, 10.0 * i) for i in range(6)]  # 1/s, up to 1050
    services.store.commit(Batch("local", "outputs", path, samples=before))
    late = Batch("local", "outputs", path, samples=[Sample("completions", "", 1080.0, 1000.0)])
    late.events.append(EventRow(CATCHUP_EVENT, 1080.0, 51, {"path": path, "from_offset": 0, "to_offset": 1}))
    services.store.commit(late)
    after = [Sample("completions", "", 1080.0 + 10 * i, 1000.0 + 10 * i) for i in range(1, 13)]
    services.store.commit(Batch("local", "outputs", path, samples=after))
    server = serve_app(create_app(services))
    points = httpx.get(f"{server.url}/api/series", params={"host": "local", "metric": "completion_rate"}).json()
    rates = dict(map(tuple, points["points"]))
    assert rates and all(abs(v - 1.0) < 1e-9 for v in rates.values())
    # the 60 s windows ending at 1080..1110 start at a sample before the gap (1020..1050): dropped;
    # from 1120 on they start at the catch-up sample itself, which was observed from there on
    assert not any(1080.0 <= t <= 1110.0 for t in rates)
    assert 1050.0 in rates and 1120.0 in rates
