"""The store side of diagnosis and prediction: which run, which window, which history.

Everything here reads; the logic lives in the pure modules (snapshot, verdicts, predict), which get
plain arrays and dicts from these functions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvwatch.app.config import HostConfig
from kvwatch.app.diagnosis.memory import is_vllm, startup_from_capacity
from kvwatch.app.diagnosis.predict import (
    FRACTION,
    VLLM_DEFAULT_FRACTION,
    VLLM_FRACTION,
    PastRun,
    Workload,
)
from kvwatch.app.diagnosis.snapshot import EMPTY, WINDOW_METRICS, Points, Snapshot, signals
from kvwatch.app.diagnosis.throughput import Curve, fit_curve, pair_samples
from kvwatch.app.diagnosis.verdicts import WARMUP_S
from kvwatch.app.metrics_catalog.names import (
    CLIENT_DONE,
    COMPLETIONS,
    GEN_THROUGHPUT,
    GPU_MEM_TOTAL_MIB,
    RUNNING_REQ,
    TOKEN,
    TOKEN_USAGE,
)
from kvwatch.app.runs import Run
from kvwatch.app.store.base import Store
from kvwatch.app.store.coverage import read_window

WINDOW_S = 300.0  # the recent window a diagnosis looks at
HISTORY_S = 6 * 3600.0  # the most of one run read for its throughput curve or earlier state
HISTORY_RUNS = 8
EVENT_LIMIT = 100_000
LATEST_METRICS = (RUNNING_REQ, GEN_THROUGHPUT, TOKEN_USAGE)
ASSUMED_GPU_GIB = 140.4  # an H200 as torch reports it; used only when nothing on the host says otherwise


def latest_sample(store: Store, host: str) -> float | None:
    found = [last[0] for m in LATEST_METRICS if (last := store.latest(host, m)) is not None]
    return max(found) if found else None


def _run_end(run: Run) -> float | None:
    ends = [x for x in (run.ended_at, run.failed_at) if x is not None]
    return min(ends) if ends else None


def pick_run(runs: list[Run], run_id: str | None, at: float) -> Run | None:
    """The named run (KeyError if unknown), else the last run started by `at`."""
    if run_id is not None:
        found = next((r for r in runs if r.id == run_id), None)
        if found is None:
            raise KeyError(run_id)
        return found
    started = [r for r in runs if r.started_at <= at]
    return started[-1] if started else (runs[-1] if runs else None)


def as_of(store: Store, host: str, run: Run | None, now: float) -> float:
    """The window's end: now for the live run (its latest sample if the log runs ahead of the wall
    clock, as a sped-up demo does), the last sample of a run that has ended."""
    latest = latest_sample(store, host)
    end = max(now, latest) if latest is not None else now
    if run is not None and (stop := _run_end(run)) is not None:
        since = max(run.started_at, stop - HISTORY_S)  # its last hours are enough to find its last line
        inside = [last for m in LATEST_METRICS
                  if len(t := store.series(host, m, since=since, until=stop)[0])
                  for last in (float(t[-1]),)]
        end = max(inside) if inside else stop
    return end


def _retractions(store: Store, host: str, since: float, until: float) -> tuple[tuple[float, float], ...]:
    """Retractions in (since, until]; each TP rank of a DP group logs the same line: counted once."""
    seen: set[tuple[object, ...]] = set()
    out = []
    for event in store.events(host, kinds=("event",), since=since, limit=EVENT_LIMIT):
        if event.get("event") != "retract" or event["t"] > until:
            continue
        key = (event["t"], (event.get("tags") or {}).get("DP"), event.get("message"))
        count = event.get("retracted_reqs")
        if key not in seen:
            seen.add(key)
            out.append((float(event["t"]), float(count) if isinstance(count, int | float) else 1.0))
    return tuple(out)


OUT_OF_MEMORY = ("out of memory", "outofmemoryerror", "not enough memory")


def _cause(event: dict[str, object]) -> str:
    """The event's kind; a scheduler exception whose error is an out-of-memory one counts as `oom`."""
    kind = str(event.get("event"))
    if kind not in ("exception", "error", "crash"):  # a retraction's "Decode out of memory" is no failure
        return kind
    text = f"{event.get('exception', '')} {event.get('message', '')}".lower()
    return "oom" if any(marker in text for marker in OUT_OF_MEMORY) else kind


def _failure(store: Store, run: Run) -> str | None:
    if run.failed_at is None:
        return None
    events = store.events(run.host, kinds=("event",), since=run.started_at - 1, limit=EVENT_LIMIT)
    seen = {_cause(event) for event in events if event["t"] <= run.failed_at}
    # The most specific cause wins: an out-of-memory traceback is also a scheduler exception.
    return next((kind for kind in ("oom", "exception", "crash") if kind in seen), "error")


def _with_start_value(store: Store, host: str, metric: str, start: float, end: float) -> Points:
    """A cumulative count in the window, led by its value at the window's start."""
    t, v = store.series(host, metric, since=start - 3600.0, until=end)
    before = t <= start
    if not np.any(before):
        return t[t > start], v[t > start]
    first = int(np.nonzero(before)[0][-1])
    return np.concatenate(([start], t[first + 1:])), np.concatenate(([v[first]], v[first + 1:]))


def _pairs(store: Store, host: str, since: float, until: float) -> tuple[np.ndarray, np.ndarray]:
    running = read_window(store, host, RUNNING_REQ, since=since, until=until)
    throughput = read_window(store, host, GEN_THROUGHPUT, since=since, until=until)
    return pair_samples(running.t, running.v, throughput.t, throughput.v)


def _earlier_rate(store: Store, host: str, since: float, until: float) -> float | None:
    t, v = store.series(host, COMPLETIONS, since=since, until=until)
    return float((v[-1] - v[0]) / (t[-1] - t[0])) if len(t) >= 2 and t[-1] > t[0] else None


def read_snapshot(
    store: Store, host: HostConfig, run: Run | None, end: float, window_s: float = WINDOW_S
) -> Snapshot:
    if run is None:
        return Snapshot(end, end - window_s, None, "none", None)
    settled = run.ready_at + WARMUP_S if run.ready_at is not None else run.started_at
    start = max(end - window_s, settled, run.started_at)
    series = {m: store.series(host.name, m, since=start, until=end) for m in WINDOW_METRICS}
    series[TOKEN] = _tokens_held(series, run.capacity)
    series[COMPLETIONS] = _with_start_value(store, host.name, COMPLETIONS, start, end)
    client = store.latest(host.name, CLIENT_DONE)
    earlier = _pairs(store, host.name, max(settled, start - HISTORY_S), start) if start > settled else EMPTY
    capacity = run.capacity
    return Snapshot(
        as_of=end, window_start=start, run_id=run.id, run_state=run.state, ready_at=run.ready_at,
        series=series, retractions=_retractions(store, host.name, start, end),
        max_running_requests=_int(capacity.get("max_running_requests")),
        max_total_num_tokens=_int(capacity.get("max_total_num_tokens")),
        hicache=bool(run.flags.get("enable-hierarchical-cache")),
        client_log=host.client_log is not None, outputs=bool(host.outputs),
        client_seen_at=client[0] if client is not None and client[0] >= run.started_at else None,
        earlier=earlier, earlier_completion_rate=_earlier_rate(store, host.name, max(settled, start - 1800), start),
        failure=_failure(store, run), flags=dict(run.flags),
        chunked_prefill_size=_int(capacity.get("chunked_prefill_size") or run.flags.get("chunked-prefill-size")),
    )


def _tokens_held(series: dict[str, Points], capacity: dict[str, object]) -> Points:
    """KV tokens held: SGLang logs them (`#token`); vLLM logs only the usage, times its pool's tokens."""
    logged, (t, usage) = series[TOKEN], series[TOKEN_USAGE]
    pool = startup_from_capacity(capacity)
    if len(logged[0]) or not len(t) or pool is None or not is_vllm(capacity):
        return logged
    return t, usage * pool.max_total_num_tokens


def _int(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _fraction(run: Run) -> float | None:
    """The run's memory fraction as logged: SGLang's --mem-fraction-static, vLLM's --gpu-memory-utilization
    (vLLM's args line lists only what differs from the defaults: absent is its default)."""
    if is_vllm(run.capacity):
        value = run.flags.get(VLLM_FRACTION, VLLM_DEFAULT_FRACTION)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    value = run.flags.get(FRACTION)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def host_curve(store: Store, host: str, runs: list[Run]) -> Curve:
    """Throughput against concurrency over this host's recent runs, warm-up included: it is real load."""
    running, throughput = [], []
    for run in runs[-HISTORY_RUNS:]:
        if run.ready_at is None:
            continue
        end = _run_end(run) or latest_sample(store, host) or run.ready_at
        r, g = _pairs(store, host, max(run.ready_at, end - HISTORY_S), end)
        running.append(r)
        throughput.append(g)
    if not running:
        return fit_curve(np.empty(0), np.empty(0))
    return fit_curve(np.concatenate(running), np.concatenate(throughput))


@dataclass(frozen=True, slots=True)
class GpuMemory:
    total_gib: float
    source: str


def gpu_memory(store: Store, host: str, runs: list[Run]) -> GpuMemory:
    """GiB of KV pool per unit of --mem-fraction-static: SGLang's total GPU memory by its formula.

    Best measured between two runs of this host with one KV dtype at two fractions (it is then in the
    units of the logged pool sizes, whatever SGLang counts as total); else nvidia-smi's memory.total;
    else assumed, and said so."""
    sized = [(f, s.kv_gib, str(r.flags.get("kv-cache-dtype", "auto")), r.id) for r in runs
             if (s := startup_from_capacity(r.capacity)) is not None and s.kv_gib is not None
             and (f := _fraction(r)) is not None]
    for i, (f1, kv1, d1, id1) in enumerate(sized):
        for f2, kv2, d2, id2 in sized[i + 1:]:
            if d1 == d2 and abs(f2 - f1) >= 0.01 and kv1 is not None and kv2 is not None and kv2 != kv1:
                return GpuMemory((kv2 - kv1) / (f2 - f1), f"pool growth per unit of fraction between runs {id1} "
                                 f"and {id2} of this host")
    profiled = [kv["total_gpu_memory_gib"] for r in reversed(runs)
                if isinstance(kv := r.capacity.get("kv_cache"), dict)
                and isinstance(kv.get("total_gpu_memory_gib"), float)]
    if profiled:
        return GpuMemory(float(profiled[0]), "vLLM's memory profiling line (total_gpu_memory)")
    totals = [last[1] for rank in store.ranks(host, GPU_MEM_TOTAL_MIB) if rank
              if (last := store.latest(host, GPU_MEM_TOTAL_MIB, rank)) is not None and last[1] > 0]
    if totals:
        return GpuMemory(min(totals) / 1024.0, "nvidia-smi memory.total")
    return GpuMemory(ASSUMED_GPU_GIB, "assumed (an H200): no nvidia-smi samples, no two runs to derive it from")


def past_runs(store: Store, runs: list[Run]) -> tuple[PastRun, ...]:
    out = []
    for run in runs[-HISTORY_RUNS:]:
        startup = startup_from_capacity(run.capacity)
        out.append(PastRun(
            run.id, _fraction(run), run.flags.get("kv-cache-dtype", "auto"),
            startup.available_after_graphs_gib if startup and run.ready_at is not None else None,
            _failure(store, run) == "oom",
        ))
    return tuple(out)


def workload(snapshot: Snapshot) -> Workload:
    sig = signals(snapshot)
    demand = (sig.running_p50 or 0.0) + (sig.queue_p50 or 0.0) if sig.running_p50 is not None else None
    return Workload(sig.tokens_per_request, demand, sig.usage_p90, sig.queue_p50)
