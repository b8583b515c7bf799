"""What-if: KV tokens, concurrency and throughput of a flag change, with its risks and their basis.

Pure: everything comes in as plain values (the running config's flags and startup lines, the
workload measured on the running config, this host's throughput curve and its earlier runs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kvwatch.app.diagnosis.memory import MemoryChange, Startup, kv_label, predict_pool
from kvwatch.app.diagnosis.throughput import Curve
from kvwatch.app.metrics_catalog.names import GEN_THROUGHPUT, QUEUE_REQ, RUNNING_REQ

FRACTION, DTYPE = "mem-fraction-static", "kv-cache-dtype"
MAX_RUNNING, MAX_TOTAL = "max-running-requests", "max-total-tokens"
DEFAULT_FRACTION = 0.85  # what the parameters of this kind of host default to when none was logged
USABLE_USAGE = 0.95  # how full the scheduler keeps a pool that limits it (the run's own top if known)
LOGGED_GIB = 0.05  # memory lines are logged with two decimals: differences below this are not differences
# Flags whose effect on GPU memory the model does not know: a prediction with them says so.
UNMODELED_MEMORY = frozenset({
    "tp-size", "dp-size", "attn-dp-size", "model-path", "quantization", "dtype", "context-length",
    "cuda-graph-max-bs", "chunked-prefill-size", "max-prefill-tokens", "speculative-algorithm",
    "enable-dp-attention", "ep-size",
})
# Flags that split the same memory between a hybrid model's pools (full-attention and sliding-window).
UNMODELED_SPLIT = frozenset({"swa-full-tokens-ratio"})
VLLM_FRACTION, VLLM_MAX_RUNNING, VLLM_LENGTH = "gpu-memory-utilization", "max-num-seqs", "max-model-len"
VLLM_DEFAULT_FRACTION = 0.9  # vLLM's default --gpu-memory-utilization


@dataclass(frozen=True, slots=True)
class EngineFlags:
    """The flags that size the KV pool and cap concurrency, by serving engine."""

    fraction: str
    default_fraction: float
    max_running: str
    max_total: str | None


ENGINES = {"sglang": EngineFlags(FRACTION, DEFAULT_FRACTION, MAX_RUNNING, MAX_TOTAL),
           "vllm": EngineFlags(VLLM_FRACTION, VLLM_DEFAULT_FRACTION, VLLM_MAX_RUNNING, None)}
NO_GPU_EFFECT = frozenset({"enable-hierarchical-cache", "hicache-size", "hicache-ratio",
                           "hicache-write-policy", "hicache-io-backend", "hicache-mem-layout"})


@dataclass(frozen=True, slots=True)
class Workload:
    """What the running config's recent samples say about the requests."""

    tokens_per_request: float | None  # #token / #running-req: KV tokens one running request holds
    demand: float | None  # running + queued: the concurrency the client asks for
    top_usage: float | None  # token usage the scheduler holds when the pool is the limit
    queue: float | None


@dataclass(frozen=True, slots=True)
class PastRun:
    """An earlier run of the same host, for the out-of-memory risk."""

    run_id: str
    fraction: float | None
    dtype: object
    available_after_graphs_gib: float | None  # None when it never got that far
    out_of_memory: bool  # it failed with an out-of-memory error at start


@dataclass(frozen=True, slots=True)
class Inputs:
    flags: dict[str, Any]  # the running config
    startup: Startup
    total_gib: float | None
    total_source: str
    workload: Workload
    curve: Curve
    history: tuple[PastRun, ...] = ()
    vetoes: tuple[str, ...] = ()  # policy refusals of the proposed flags, as sentences
    # When an earlier run stands in (inputs.py): the flags the run sets differently from the one whose
    # startup lines these are, what was taken from where (basis sentences), and why no workload is known.
    pending: dict[str, Any] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    unknown_workload: str | None = None


@dataclass(slots=True)
class Prediction:
    max_total_num_tokens: int | None
    running_req: float | None
    gen_throughput: float | None
    queue_req: float | None
    risks: list[dict[str, str]] = field(default_factory=list)
    basis: dict[str, Any] = field(default_factory=dict)
    left_after_graphs_gib: float | None = None  # GPU memory the new pool would leave after CUDA graphs

    def as_dict(self) -> dict[str, Any]:
        return {
            "max_total_num_tokens": self.max_total_num_tokens,
            RUNNING_REQ: self.running_req,
            GEN_THROUGHPUT: self.gen_throughput,
            QUEUE_REQ: self.queue_req,
            "risks": self.risks,
            "basis": self.basis,
            "left_after_graphs_gib": self.left_after_graphs_gib,
        }


def _names(inputs: Inputs) -> EngineFlags:
    return ENGINES.get(inputs.startup.engine, ENGINES["sglang"])


def _fraction(flags: dict[str, Any], names: EngineFlags = ENGINES["sglang"]) -> float:
    value = flags.get(names.fraction)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else names.default_fraction


def _pool(inputs: Inputs, merged: dict[str, Any]) -> MemoryChange:
    names = _names(inputs)
    change = predict_pool(inputs.startup, _fraction(inputs.flags, names), _fraction(merged, names),
                          inputs.flags.get(DTYPE), merged.get(DTYPE), inputs.total_gib, names.fraction)
    cap = merged.get(names.max_total) if names.max_total is not None else None
    if change.tokens is not None and isinstance(cap, int) and cap < change.tokens:
        return MemoryChange(cap, change.kv_gib, change.added_gib, change.left_after_graphs_gib,
                            change.basis + f"; capped by --max-total-tokens {cap}")
    return change


def _running(inputs: Inputs, merged: dict[str, Any], tokens: int | None) -> tuple[float | None, str]:
    work = inputs.workload
    max_running = _names(inputs).max_running
    limit = merged.get(max_running) if isinstance(merged.get(max_running), int) else None
    limit = limit if limit is not None else inputs.startup.max_running_requests
    if tokens is None or not work.tokens_per_request:
        return None, "no KV tokens or no tokens per running request to divide"
    usage = max(work.top_usage or 0.0, USABLE_USAGE) if (work.queue or 0) >= 1 else USABLE_USAGE
    by_kv = tokens * usage / work.tokens_per_request
    bounds = [(by_kv, f"{tokens} tokens x {usage:.2f} usable / {work.tokens_per_request:,.0f} tokens a request "
                      f"= {by_kv:.0f} (KV)")]
    if work.demand is not None:
        bounds.append((work.demand, f"the client asks for {work.demand:.0f} (running + queued now)"))
    if limit is not None:
        bounds.append((float(limit), f"--{max_running} {limit}"))
    value, why = min(bounds, key=lambda b: b[0])
    others = "; ".join(text for v, text in bounds if text != why)
    return round(value, 1), f"the least of: {why}" + (f"; {others}" if others else "")


def _throughput(curve: Curve, running: float | None) -> tuple[float | None, str]:
    if running is None:
        return None, "no concurrency predicted"
    value = curve.at(running)
    if value is None:
        return None, curve.describe()
    span = curve.span()
    note = f"at {running:.0f} running: {curve.describe()}"
    if span is not None and not span[0] <= running <= span[1]:
        note += f" (extrapolated: this host was measured at {span[0]:.0f}-{span[1]:.0f} running)"
    return round(value, 1), note


def predict(inputs: Inputs, changes: dict[str, Any]) -> Prediction:
    """The running config with `changes` applied (values None drop a flag back to its default)."""
    moved = {**inputs.pending, **changes}  # from the flags the startup lines were logged with
    merged = {**inputs.flags, **moved}
    for name in [n for n, v in moved.items() if v is None]:
        merged.pop(name, None)
    pool = _pool(inputs, merged)
    running, running_basis = _running(inputs, merged, pool.tokens)
    throughput, throughput_basis = _throughput(inputs.curve, running)
    queue = None
    if running is not None and inputs.workload.demand is not None:
        queue = round(max(inputs.workload.demand - running, 0.0), 1)
    left = None if pool.left_after_graphs_gib is None else round(pool.left_after_graphs_gib, 2)
    prediction = Prediction(pool.tokens, running, throughput, queue, left_after_graphs_gib=left)
    prediction.basis = {
        **inputs.notes,
        "changes": changes,
        "max_total_num_tokens": pool.basis,
        RUNNING_REQ: running_basis,
        GEN_THROUGHPUT: throughput_basis,
        "total_gpu_memory": (f"{inputs.total_gib:.1f} GiB ({inputs.total_source})"
                             if inputs.total_gib is not None else inputs.total_source),
    }
    names = _names(inputs)
    if names.fraction not in inputs.flags:
        prediction.basis["running_fraction"] = (f"the run logged no --{names.fraction} (no args line, or the "
                                                f"default): assumed {names.default_fraction}")
    if inputs.startup.engine == "vllm":
        prediction.basis["engine"] = ("vLLM: --gpu-memory-utilization is the share of each GPU's total memory the "
                                      "whole instance takes; the KV pool is what weights and activations leave")
        if (concurrency := _concurrency(merged, inputs.startup, pool.tokens)) is not None:
            prediction.basis["max_concurrency"] = concurrency
    if any(n in NO_GPU_EFFECT for n in changes):
        prediction.basis["host_cache"] = "the hierarchical cache lives in host memory: no change to GPU KV tokens"
    prediction.risks = risks(inputs, merged, moved, pool)
    if running is None and inputs.unknown_workload is not None:
        prediction.risks.append({"kind": "unknown", "message": inputs.unknown_workload})
    return prediction


def _concurrency(merged: dict[str, Any], startup: Startup, tokens: int | None) -> str | None:
    """vLLM's `Maximum concurrency` of the predicted pool: requests of max_model_len tokens that fit."""
    length = merged.get(VLLM_LENGTH, startup.max_model_len)
    if tokens is None or not isinstance(length, int) or length <= 0:
        return None
    return f"{tokens:,} tokens / {length:,} tokens a request = {tokens / length:.2f}x requests of full length"


def risks(inputs: Inputs, merged: dict[str, Any], changes: dict[str, Any], pool: MemoryChange) -> list[dict[str, str]]:
    found = [{"kind": "vetoed", "message": text} for text in inputs.vetoes]
    names = _names(inputs)
    fraction = _fraction(merged, names)
    left = pool.left_after_graphs_gib
    if left is not None and pool.added_gib > 0 and left < 0:
        found.append({"kind": "oom", "severity": "certain", "message": (
            f"out of memory at start: the larger pool takes {pool.added_gib:.2f} GiB more per GPU, the running "
            f"config left {inputs.startup.available_after_graphs_gib:.2f} GiB after CUDA-graph capture")})
    elif left is not None and pool.added_gib > 0:
        ran = [p.available_after_graphs_gib for p in inputs.history if p.available_after_graphs_gib is not None]
        floor = min([*ran, inputs.startup.available_after_graphs_gib or left])
        if left < floor - LOGGED_GIB:
            found.append({"kind": "oom", "severity": "possible", "message": (
                f"possible out of memory at start: {left:.2f} GiB would be left after CUDA-graph capture, "
                f"less than any run of this host started with (least: {floor:.2f} GiB)")})
    for past in inputs.history:
        same_width = kv_label(past.dtype) == kv_label(merged.get(DTYPE)) or past.dtype == merged.get(DTYPE)
        if past.out_of_memory and past.fraction is not None and fraction >= past.fraction and same_width:
            found.append({"kind": "oom", "severity": "likely", "message": (
                f"run {past.run_id} ran out of memory at start with --{names.fraction} {past.fraction}")})
    if inputs.startup.engine == "vllm" and pool.added_gib > 0:
        found.append({"kind": "not_modeled", "message": (
            "vLLM logs no memory left after CUDA-graph capture: whether a larger --gpu-memory-utilization "
            "runs out of memory at start is not assessed")})
    unmodeled = sorted(n for n in changes if n in UNMODELED_MEMORY)
    if unmodeled:
        found.append({"kind": "not_modeled", "message": (
            f"the effect of --{', --'.join(unmodeled)} on GPU memory is not modeled: the numbers assume none")})
    split = sorted(n for n in changes if n in UNMODELED_SPLIT)
    if split:
        found.append({"kind": "not_modeled", "message": (
            f"how --{', --'.join(split)} splits the same memory between the full-attention and sliding-window "
            "pools is not modeled: the numbers are the running config's")})
    if pool.tokens is None:
        found.append({"kind": "unknown", "message": pool.basis})
    return found
