"""What one diagnosis looks at, as plain values, and the numbers read off it.

A `Snapshot` is the recent window of one host's current run (its series as (t, v) arrays, the
retractions logged, what the run's startup lines and flags say) plus the run's own earlier steady
samples. `Signals` are the few numbers the verdicts are decided on; both are pure data, so every
verdict can be tested on literal series.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from kvwatch.app.metrics_catalog.names import (
    CACHED_TOKEN,
    CLIENT_DONE,
    COMPLETIONS,
    FULL_TOKEN_USAGE,
    GEN_THROUGHPUT,
    NEW_SEQ,
    NEW_TOKEN,
    QUEUE_REQ,
    RUNNING_REQ,
    SWA_TOKEN_USAGE,
    TOKEN,
    TOKEN_USAGE,
)

FloatArray = npt.NDArray[np.float64]
Points = tuple[FloatArray, FloatArray]  # (t epoch seconds, v)
WINDOW_METRICS = (TOKEN_USAGE, RUNNING_REQ, QUEUE_REQ, GEN_THROUGHPUT, TOKEN, NEW_SEQ,
                  NEW_TOKEN, CACHED_TOKEN, COMPLETIONS, CLIENT_DONE,
                  FULL_TOKEN_USAGE, SWA_TOKEN_USAGE)  # a sliding-window model's two pools


def points(t: list[float] | FloatArray, v: list[float] | FloatArray) -> Points:
    return np.asarray(t, dtype=np.float64), np.asarray(v, dtype=np.float64)


EMPTY: Points = (np.empty(0), np.empty(0))


@dataclass(frozen=True, slots=True)
class Snapshot:
    as_of: float  # the end of the window (epoch seconds)
    window_start: float
    run_id: str | None
    run_state: str  # "starting" | "running" | "ended" | "failed" | "none"
    ready_at: float | None
    series: dict[str, Points] = field(default_factory=dict)  # inside the window
    retractions: tuple[tuple[float, float], ...] = ()  # (t, retracted requests) inside the window
    max_running_requests: int | None = None
    max_total_num_tokens: int | None = None
    hicache: bool = False  # --enable-hierarchical-cache
    client_log: bool = False  # the host's config tails a client log
    outputs: bool = False  # the host's config counts output files
    client_seen_at: float | None = None  # the client log's last progress line of this run, if any
    earlier: Points = EMPTY  # this run's (running, throughput) pairs before the window, warm-up cut
    earlier_completion_rate: float | None = None  # completions a second before the window
    failure: str | None = None  # the event that failed the run
    flags: dict[str, object] = field(default_factory=dict)  # the run's flags (`mem-fraction-static`: 0.88)
    chunked_prefill_size: int | None = None  # the most prompt tokens one prefill batch computes

    def get(self, metric: str) -> Points:
        return self.series.get(metric, EMPTY)

    @property
    def duration(self) -> float:
        return max(self.as_of - self.window_start, 0.0)


@dataclass(frozen=True, slots=True)
class Signals:
    samples: int  # decode/prefill samples of running requests in the window
    usage_p50: float | None
    usage_p90: float | None
    running_p50: float | None
    running_max: float | None
    queue_p50: float | None
    queue_p90: float | None
    throughput_p50: float | None
    tokens_per_request: float | None
    retracted: float  # requests sent back to the queue in the window
    retract_events: int
    admitted: float  # prefill #new-seq in the window
    new_tokens: float | None  # prefill #new-token in the window (None: no prefill lines)
    prefill_batch_p50: float | None  # median #new-token of one prefill batch
    cached_tokens: float | None  # prefill #cached-token in the window (None: not logged)
    completions_growth: float | None  # output-file lines added in the window (None: not counted)
    client_lines: int  # client progress lines in the window
    last_sample_t: float | None
    full_usage_p50: float | None = None  # a sliding-window model's full-attention pool (parsers/sglang.py)
    swa_usage_p50: float | None = None  # ... and its sliding-window pool; None: not such a model


def _pct(points_: Points, q: float) -> float | None:
    return float(np.percentile(points_[1], q)) if len(points_[1]) else None


def _growth(points_: Points) -> float | None:
    return float(points_[1][-1] - points_[1][0]) if len(points_[1]) >= 1 else None


def _tokens_per_request(snapshot: Snapshot) -> float | None:
    (t_tok, tok), (t_run, run) = snapshot.get(TOKEN), snapshot.get(RUNNING_REQ)
    if not len(tok) or not len(run):
        return None
    index = np.searchsorted(t_run, t_tok, side="right") - 1
    held = (index >= 0)
    running = run[index[held]]
    busy = running > 0
    if not np.any(busy):
        return None
    return float(np.median(tok[held][busy] / running[busy]))


def signals(snapshot: Snapshot) -> Signals:
    running = snapshot.get(RUNNING_REQ)
    times = [float(p[0][-1]) for m in (RUNNING_REQ, GEN_THROUGHPUT, TOKEN_USAGE)
             if len((p := snapshot.get(m))[0])]
    prefill = snapshot.get(NEW_TOKEN)
    cached = snapshot.get(CACHED_TOKEN)
    completions = snapshot.get(COMPLETIONS)
    return Signals(
        samples=len(running[0]),
        usage_p50=_pct(snapshot.get(TOKEN_USAGE), 50),
        usage_p90=_pct(snapshot.get(TOKEN_USAGE), 90),
        running_p50=_pct(running, 50),
        running_max=float(running[1].max()) if len(running[1]) else None,
        queue_p50=_pct(snapshot.get(QUEUE_REQ), 50),
        queue_p90=_pct(snapshot.get(QUEUE_REQ), 90),
        throughput_p50=_pct(snapshot.get(GEN_THROUGHPUT), 50),
        tokens_per_request=_tokens_per_request(snapshot),
        retracted=float(sum(n for _, n in snapshot.retractions)),
        retract_events=len(snapshot.retractions),
        admitted=float(snapshot.get(NEW_SEQ)[1].sum()),
        new_tokens=float(prefill[1].sum()) if len(prefill[1]) else None,
        prefill_batch_p50=_pct(prefill, 50),
        cached_tokens=float(cached[1].sum()) if len(cached[1]) else None,
        completions_growth=_growth(completions) if snapshot.outputs or len(completions[1]) else None,
        client_lines=len(snapshot.get(CLIENT_DONE)[1]),
        last_sample_t=max(times) if times else None,
        full_usage_p50=_pct(snapshot.get(FULL_TOKEN_USAGE), 50),
        swa_usage_p50=_pct(snapshot.get(SWA_TOKEN_USAGE), 50),
    )
