"""A GPU that needs a reset or fell off the bus, as nvidia-smi's loop reports it, is one stored `error`
event per fault (not one a second), and its bracketed cells are never stored as values."""

from __future__ import annotations

from kvwatch.app.bus import EventBus
from kvwatch.app.pipeline.sink import StoreSink
from kvwatch.app.store import Store
from kvwatch.collectors.base import Line

TICKS = [
    "2026/12/02 14:53:08.174, 0, 98, 122204, 143771, 612.40, 61",
    "2026/12/02 14:53:08.174, 1, [GPU requires reset], [GPU requires reset], [GPU requires reset], "
    "[GPU requires reset], [GPU requires reset]",
    "2026/12/02 14:53:09.175, 0, 97, 122204, 143771, 608.10, 61",
    "2026/12/02 14:53:09.175, 1, [GPU requires reset], [GPU requires reset], [GPU requires reset], "
    "[GPU requires reset], [GPU requires reset]",
    "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error",
    "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error",
]


def test_a_gpu_fault_is_one_error_event_and_no_value(store: Store) -> None:
    sink = StoreSink("gpu1", store, EventBus(), timezone="UTC")
    lines = [Line("gpu", 1, n * 100, n, text) for n, text in enumerate(TICKS, 1)]
    sink.deliver("gpu1", "gpu", "nvidia-smi", lines[:3], None)
    sink.deliver("gpu1", "gpu", "nvidia-smi", lines[3:], None)
    errors = [e for e in store.events("gpu1", kinds=("event",)) if e.get("event") == "error"]
    assert sorted(e["message"] for e in errors) == [
        "GPU 1: GPU requires reset", "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error"]
    assert ("gpu_util_pct", "GPU0") in store.catalog("gpu1")
    assert ("gpu_util_pct", "GPU1") not in store.catalog("gpu1")
