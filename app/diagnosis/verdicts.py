"""The verdict rules: each looks at a snapshot's signals and says whether it applies, with the numbers.

Rules are tried in order of what to act on first; every rule that applies is kept as a finding, the
first one is the verdict. Thresholds are the ones a person reading the log would use: usage at the
top is >= 0.90 (SGLang keeps a reserve for the requests' future tokens, so a full pool shows 0.92-0.98),
"no queue" is a p90 below one request (client_bound: no queue and no retraction,
whatever the usage), "pinned at the cap" is within 2 % (at least one request) of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kvwatch.app.diagnosis.snapshot import Signals, Snapshot
from kvwatch.app.diagnosis.wording import num, share_of
from kvwatch.app.metrics_catalog.names import (
    CACHED_TOKEN,
    CLIENT_DONE,
    COMPLETIONS,
    GEN_THROUGHPUT,
    NEW_TOKEN,
    QUEUE_REQ,
    RUNNING_REQ,
    TOKEN_USAGE,
)

VERDICTS = ("kv_bound", "client_bound", "concurrency_capped", "prefill_bound", "retracting", "degraded",
            "hicache_idle", "client_stalled", "client_buffered", "starting", "idle", "unknown")
WARMUP_S = 60.0  # after the ready line, the admission burst: not the steady state
USAGE_TOP = 0.90
# With a queue, usage from here up is KV-bound too when prefill batches are not full: SGLang admits a
# request only if the free pool also covers the running requests' reserved future tokens.
RESERVED_USAGE = 0.75
FULL_PREFILL = 0.75  # a prefill batch this share of --chunked-prefill-size is a full one
HEADROOM_USAGE = 0.90
THRASH_SHARE = 0.75  # retracted per admitted request: most admissions end retracted, not finished
THRASH_MIN_RETRACTED = 10
DEGRADED_RATIO = 0.75  # throughput below this share of the run's own at the same concurrency
SAME_CONCURRENCY = 0.10
MIN_EARLIER = 20
MIN_EXPECTED_COMPLETIONS = 5.0
STALL_MIN_WINDOW_S = 120.0


@dataclass(slots=True)
class Finding:
    verdict: str
    evidence: list[dict[str, Any]] = field(default_factory=list)

    def add(self, metric: str, value: float | str | None, fact: str,
            numbers: dict[str, float | None] | None = None) -> Finding:
        """One item: the metric's value, the sentence, and every number the sentence states, by name."""
        shown = round(value, 4) if isinstance(value, float) else value
        named = numbers if numbers is not None else (
            {metric: value} if isinstance(value, int | float) and not isinstance(value, bool) else {})
        rounded = {k: round(v, 4) if isinstance(v, float) else v for k, v in named.items()}
        self.evidence.append({"metric": metric, "value": shown, "fact": fact, "numbers": rounded})
        return self


Rule = Callable[[Snapshot, Signals], Finding | None]


def _capped(snapshot: Snapshot, sig: Signals) -> bool:
    cap = snapshot.max_running_requests
    if cap is None or sig.running_p50 is None:
        return False
    return sig.running_p50 >= cap - max(1.0, 0.02 * cap)


def _queued(sig: Signals) -> bool:
    return sig.queue_p50 is not None and sig.queue_p50 >= 1


def _prefill_full(snapshot: Snapshot, sig: Signals) -> bool | None:
    """Whether prefill batches fill the chunk (None: no prefill lines or no chunk size known)."""
    if sig.prefill_batch_p50 is None or not snapshot.chunked_prefill_size:
        return None
    return sig.prefill_batch_p50 >= FULL_PREFILL * snapshot.chunked_prefill_size


def _held_by_kv(snapshot: Snapshot, sig: Signals) -> bool:
    if sig.usage_p50 is None:
        return False
    if sig.usage_p50 >= USAGE_TOP:
        return _queued(sig) or sig.retracted > 0
    return sig.usage_p50 >= RESERVED_USAGE and _queued(sig) and _prefill_full(snapshot, sig) is False


def retracting(snapshot: Snapshot, sig: Signals) -> Finding | None:
    if sig.retracted < THRASH_MIN_RETRACTED or sig.retracted < THRASH_SHARE * max(sig.admitted, 1.0):
        return None
    share = share_of(sig.retracted, sig.admitted)
    admitted = (f"{share:.0%} of the {sig.admitted:.0f} admissions in the window (thrashing from "
                f"{THRASH_SHARE:.0%}): requests are admitted, decoded, then sent back" if share is not None else
                f"no admission logged in the window: the {sig.retracted:.0f} requests retracted had been admitted "
                "before it, and none got back in")
    return (Finding("retracting")
            .add("retracted_reqs", sig.retracted, f"{sig.retracted:.0f} requests retracted in "
                 f"{sig.retract_events} retractions over {snapshot.duration:.0f} s",
                 {"retracted_reqs": sig.retracted, "retractions": sig.retract_events, "seconds": snapshot.duration})
            .add("admitted", sig.admitted, admitted,
                 {"admitted": sig.admitted, "retracted_reqs": sig.retracted, "share": share})
            .add(TOKEN_USAGE, sig.usage_p50, f"token usage median {num(sig.usage_p50, '.2f')}"))


def client_stalled(snapshot: Snapshot, sig: Signals) -> Finding | None:
    if sig.completions_growth is None or sig.completions_growth > 0 or snapshot.duration < STALL_MIN_WINDOW_S:
        return None
    if not sig.running_p50 or not sig.throughput_p50:
        return None
    rate = snapshot.earlier_completion_rate or 0.0
    expected = max(sig.admitted - sig.retracted, rate * snapshot.duration)
    per_minute = None if snapshot.earlier_completion_rate is None else snapshot.earlier_completion_rate * 60
    if expected < MIN_EXPECTED_COMPLETIONS:
        return None
    return (Finding("client_stalled")
            .add(COMPLETIONS, 0.0, f"output files did not grow in {snapshot.duration:.0f} s")
            .add(RUNNING_REQ, sig.running_p50, f"while the server runs {sig.running_p50:.0f} requests at "
                 f"{sig.throughput_p50:.0f} tok/s")
            .add("expected_completions", expected, f"about {expected:.0f} completions were due (server admissions, "
                 f"or the run's earlier {num(per_minute, '.1f')}/min)"))


def degraded(snapshot: Snapshot, sig: Signals) -> Finding | None:
    running, throughput = snapshot.earlier
    if sig.running_p50 is None or sig.throughput_p50 is None or sig.running_p50 <= 0:
        return None
    near = np.abs(running - sig.running_p50) <= SAME_CONCURRENCY * sig.running_p50
    if np.count_nonzero(near) < MIN_EARLIER:
        return None
    before = float(np.median(throughput[near]))
    if before <= 0 or sig.throughput_p50 >= DEGRADED_RATIO * before:
        return None
    change = sig.throughput_p50 / before - 1
    return (Finding("degraded")
            .add(GEN_THROUGHPUT, sig.throughput_p50, f"{sig.throughput_p50:.0f} tok/s now at ~{sig.running_p50:.0f} "
                 f"running")
            .add("earlier_gen_throughput", before, f"{before:.0f} tok/s earlier in this run at the same concurrency "
                 f"(±{SAME_CONCURRENCY:.0%}, {np.count_nonzero(near)} samples): {change:+.0%}"))


def concurrency_capped(snapshot: Snapshot, sig: Signals) -> Finding | None:
    if not _capped(snapshot, sig):
        return None
    finding = Finding("concurrency_capped").add(
        RUNNING_REQ, sig.running_p50, f"running median {sig.running_p50:.0f} = --max-running-requests "
        f"{snapshot.max_running_requests}")
    finding.add(TOKEN_USAGE, sig.usage_p50, f"token usage median {num(sig.usage_p50, '.2f')}")
    return finding.add(QUEUE_REQ, sig.queue_p50, f"queue median {num(sig.queue_p50)}")


def kv_bound(snapshot: Snapshot, sig: Signals) -> Finding | None:
    if not _held_by_kv(snapshot, sig) or sig.usage_p50 is None:
        return None
    top = (f"at the top (>= {USAGE_TOP})" if sig.usage_p50 >= USAGE_TOP else
           f"the rest is reserved for the running requests' future tokens (prefill batches of "
           f"{num(sig.prefill_batch_p50, ',.0f')} tokens are not full: prefill is not the limit)")
    finding = Finding("kv_bound").add(
        TOKEN_USAGE, sig.usage_p50, f"token usage median {sig.usage_p50:.2f} (p90 {sig.usage_p90:.2f}), {top}")
    if _queued(sig):
        finding.add(QUEUE_REQ, sig.queue_p50, f"queue median {sig.queue_p50:.0f} requests waiting")
    if sig.retracted:
        finding.add("retracted_reqs", sig.retracted,
                    f"{sig.retracted:.0f} requests retracted in {snapshot.duration:.0f} s")
    if sig.tokens_per_request and snapshot.max_total_num_tokens:
        held = snapshot.max_total_num_tokens / sig.tokens_per_request
        finding.add(RUNNING_REQ, sig.running_p50, (
            f"running median {sig.running_p50:.0f}: each holds ~{sig.tokens_per_request:,.0f} tokens, "
            f"so {snapshot.max_total_num_tokens:,} KV tokens fit ~{held:.0f}"))
    else:
        finding.add(RUNNING_REQ, sig.running_p50, f"running median {num(sig.running_p50)}")
    return finding


def prefill_bound(snapshot: Snapshot, sig: Signals) -> Finding | None:
    if not _queued(sig) or sig.usage_p50 is None or sig.usage_p50 >= USAGE_TOP or sig.retracted:
        return None
    if _prefill_full(snapshot, sig) is not True:  # a queue with small prefill batches waits on something else
        return None
    finding = Finding("prefill_bound").add(QUEUE_REQ, sig.queue_p50,
                                           f"queue median {sig.queue_p50:.0f} requests waiting")
    finding.add(TOKEN_USAGE, sig.usage_p50, f"token usage median {sig.usage_p50:.2f}: KV room is left")
    cap = snapshot.max_running_requests
    finding.add(RUNNING_REQ, sig.running_p50, f"running median {num(sig.running_p50)}"
                + (f", below --max-running-requests {cap}" if cap else ""))
    rate = (sig.new_tokens or 0.0) / max(snapshot.duration, 1.0)
    finding.add(NEW_TOKEN, sig.prefill_batch_p50, (
        f"prefill batches of {num(sig.prefill_batch_p50, ',.0f')} tokens fill --chunked-prefill-size "
        f"{snapshot.chunked_prefill_size} ({rate:,.0f} new tokens/s): admission is paced by prefill"))
    return finding


def hicache_idle(snapshot: Snapshot, sig: Signals) -> Finding | None:
    if not snapshot.hicache or sig.cached_tokens is None or sig.cached_tokens > 0 or not sig.new_tokens:
        return None
    return (Finding("hicache_idle")
            .add(CACHED_TOKEN, 0.0, f"0 cached tokens in {snapshot.duration:.0f} s of prefill with the "
                 "hierarchical cache on")
            .add(NEW_TOKEN, sig.new_tokens, f"{sig.new_tokens:,.0f} prompt tokens computed from scratch"))


def client_buffered(snapshot: Snapshot, sig: Signals) -> Finding | None:
    if not snapshot.client_log or not sig.completions_growth or sig.client_lines:
        return None
    since = ("never wrote a progress line in this run" if snapshot.client_seen_at is None
             else f"last progress line {snapshot.as_of - snapshot.client_seen_at:.0f} s ago")
    return (Finding("client_buffered")
            .add(COMPLETIONS, sig.completions_growth, f"output files grew by {sig.completions_growth:.0f} "
                 f"in {snapshot.duration:.0f} s")
            .add(CLIENT_DONE, None, f"while the client log is silent: it {since} (stdout block-buffered?)"))


def client_bound(snapshot: Snapshot, sig: Signals) -> Finding | None:
    """Nothing waits and nothing is sent back: the server runs every request it is sent."""
    if sig.usage_p90 is None or (sig.queue_p90 or 0) >= 1 or sig.retracted or _capped(snapshot, sig):
        return None
    finding = Finding("client_bound").add(QUEUE_REQ, sig.queue_p90 or 0.0, (
        f"no queue (p90 {num(sig.queue_p90)}) and no retraction in {snapshot.duration:.0f} s: the server "
        "takes every request it is sent"))
    running = f"running median {num(sig.running_p50)}"
    if snapshot.max_running_requests:
        running += f" of --max-running-requests {snapshot.max_running_requests}"
    finding.add(RUNNING_REQ, sig.running_p50, running + ": in flight is what the client sends")
    room = "KV headroom left" if sig.usage_p90 < HEADROOM_USAGE else "close to the top: more load meets the KV limit"
    return finding.add(TOKEN_USAGE, sig.usage_p90, f"token usage p90 {sig.usage_p90:.2f}: {room}")


RULES: tuple[Rule, ...] = (retracting, client_stalled, degraded, concurrency_capped, kv_bound, prefill_bound,
                           hicache_idle, client_buffered, client_bound)
