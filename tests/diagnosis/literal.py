"""Literal windows for the verdict tests: a 300 s window of samples every 5 s, levels given by hand."""

from __future__ import annotations

from typing import Any

import numpy as np

from kvwatch.app.diagnosis.snapshot import Points, Snapshot, points

T0 = 1_771_934_400.0  # 2026-02-24 12:00:00 UTC, the run's ready line
START = T0 + 600.0  # the window: ten minutes after ready
STEP = 5.0
N = 60  # 300 s


def level(value: float | list[float], n: int = N) -> Points:
    """A series at `value` (or cycling through the values given) every STEP seconds in the window."""
    values = value if isinstance(value, list) else [value]
    t = START + STEP * np.arange(n)
    return points(t, [values[i % len(values)] for i in range(n)])


def counter(first: float, per_step: float, n: int = N) -> Points:
    """A cumulative count growing by `per_step` each step."""
    return points(START + STEP * np.arange(n), first + per_step * np.arange(n))


def busy(
    usage: float, running: float | list[float], queue: float, throughput: float, tokens: float | None = None,
) -> dict[str, Points]:
    series = {
        "token_usage": level(usage),
        "running_req": level(running),
        "queue_req": level(queue),
        "gen_throughput": level(throughput),
    }
    if tokens is not None:
        series["token"] = level(tokens)
    return series


def window(series: dict[str, Points], **facts: Any) -> Snapshot:
    defaults: dict[str, Any] = {
        "as_of": START + STEP * (N - 1),
        "window_start": START,
        "run_id": "gpu1-20260224T120000",
        "run_state": "running",
        "ready_at": T0,
        "series": series,
        "max_running_requests": 2048,
        "max_total_num_tokens": 158_983,
    }
    return Snapshot(**{**defaults, **facts})
