"""What the stream says of a host's runs beyond the log's own lines.

A server start reaches the page as it is logged (`event` ready, `run` server_args/capacity), but a
new run has no decode samples then: its compare row, steady window and what-if are "not yet" until
they arrive. So the first decode sample after a start is news too: a `run` event with
`kind: "decoding"`, after which the page fetches those views again.
"""

from __future__ import annotations

from typing import Any

from kvwatch.app.metrics_catalog.names import GEN_THROUGHPUT, TOKEN_USAGE
from kvwatch.app.store.base import Batch

DECODE_METRICS = frozenset({TOKEN_USAGE, GEN_THROUGHPUT})
STARTS = frozenset({"server_args", "capacity"})


def _starts(batch: Batch) -> list[float]:
    return [e.t for e in batch.events if e.kind in STARTS or (e.kind == "event" and e.data.get("event") == "ready")]


def _decode_times(batch: Batch) -> list[float]:
    times = [s.t for s in batch.samples if not s.rank and s.metric in DECODE_METRICS]
    times += [float(c.t[0]) for c in batch.columns if not c.rank and c.metric in DECODE_METRICS and len(c.t)]
    return times


class RunNews:
    """One host's: a start seen and no decode sample after it yet, and the news when one comes."""

    def __init__(self, host: str) -> None:
        self.host = host
        self._waiting_since: float | None = None

    def after(self, batch: Batch) -> list[dict[str, Any]]:
        """The `run` events a committed batch makes news of."""
        starts = _starts(batch)
        if starts:
            self._waiting_since = max(starts)
        if self._waiting_since is None:
            return []
        decoded = [t for t in _decode_times(batch) if t >= self._waiting_since]
        if not decoded:
            return []
        self._waiting_since = None
        return [{"host": self.host, "kind": "decoding", "t": min(decoded)}]
