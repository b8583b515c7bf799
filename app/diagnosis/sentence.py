"""A diagnosis in one line, as the page shows it: the verdict's name and the numbers it rests on.

"KV-bound: token usage 0.96 at 72 running, queue 79, 1,210 tok/s". A number the window did not
measure is left out rather than shown as 0; a lifecycle verdict (starting, idle, unknown) says its
one fact instead.
"""

from __future__ import annotations

from typing import Any

from kvwatch.app.diagnosis.snapshot import Signals

LABELS = {
    "kv_bound": "KV-bound", "client_bound": "client-bound", "concurrency_capped": "capped by --max-running-requests",
    "prefill_bound": "prefill-bound", "retracting": "retracting", "degraded": "degraded",
    "hicache_idle": "hierarchical cache unused", "client_stalled": "client stalled",
    "client_buffered": "client log buffered", "starting": "starting", "idle": "idle", "unknown": "unknown",
}
LIFECYCLE = frozenset({"starting", "idle", "unknown"})


def _numbers(sig: Signals) -> list[str]:
    parts = []
    if sig.usage_p50 is not None:
        parts.append(f"token usage {sig.usage_p50:.2f}"
                     + (f" at {sig.running_p50:.0f} running" if sig.running_p50 is not None else ""))
    elif sig.running_p50 is not None:
        parts.append(f"{sig.running_p50:.0f} running")
    if sig.queue_p50 is not None:
        parts.append(f"queue {sig.queue_p50:.0f}")
    if sig.throughput_p50 is not None:
        parts.append(f"{sig.throughput_p50:,.0f} tok/s")
    if sig.retracted:
        parts.append(f"{sig.retracted:.0f} retracted")
    return parts


def sentence(verdict: str, evidence: list[dict[str, Any]], sig: Signals) -> str:
    label = LABELS.get(verdict, verdict.replace("_", " "))
    parts = [] if verdict in LIFECYCLE else _numbers(sig)
    if not parts and evidence:
        parts = [str(evidence[0]["fact"])]
    return f"{label}: {', '.join(parts)}" if parts else label
