"""Concrete advice for a verdict: flags to change, each with its predicted effect where it has one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvwatch.app.diagnosis.memory import kv_width
from kvwatch.app.diagnosis.snapshot import Signals, Snapshot
from kvwatch.app.metrics_catalog.names import GEN_THROUGHPUT, RUNNING_REQ

Predictor = Callable[[dict[str, Any]], dict[str, Any]]  # flag changes -> a prediction (see predict.py)
FRACTION_STEP = 0.02
ROOM_USAGE = 0.90  # plan new concurrency to fill the pool this far, leaving SGLang its reserve
SWA_RATIO, SWA_RATIO_STEP = "swa-full-tokens-ratio", 0.1
POOL_GAP = 0.15  # one pool this much fuller than the other (medians): the split is what to move


def effect(predicted: dict[str, Any]) -> str:
    """The predicted KV tokens, running requests and tok/s of a change in words (unknown said so)."""
    tokens, running, rate = (predicted.get(k) for k in ("max_total_num_tokens", RUNNING_REQ, GEN_THROUGHPUT))
    return (f"{'unknown' if tokens is None else f'{tokens:,.0f}'} KV tokens, "
            f"{'unknown' if running is None else f'{running:.0f}'} running, "
            f"{'unknown' if rate is None else f'{rate:,.0f}'} tok/s")


def _advice(action: str, flags: dict[str, Any] | None = None, predictor: Predictor | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"action": action, "flags": flags}
    if flags and predictor is not None:
        entry["predicted"] = predictor(flags)
        entry["effect"] = effect(entry["predicted"])
    return entry


def _fraction(snapshot: Snapshot) -> float | None:
    value = snapshot.flags.get("mem-fraction-static")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _room(snapshot: Snapshot, sig: Signals) -> float | None:
    if not sig.tokens_per_request or not snapshot.max_total_num_tokens:
        return None
    return snapshot.max_total_num_tokens * ROOM_USAGE / sig.tokens_per_request


def _pool_split(snapshot: Snapshot, sig: Signals, predictor: Predictor | None) -> list[dict[str, Any]]:
    """A sliding-window model whose one pool fills while the other has room: SGLang's
    --swa-full-tokens-ratio (SWA layer tokens / full layer tokens, 0..1) moves tokens between them."""
    full, swa = sig.full_usage_p50, sig.swa_usage_p50
    if full is None or swa is None or abs(swa - full) < POOL_GAP:
        return []
    value = snapshot.flags.get(SWA_RATIO)
    ratio = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    raise_it = swa > full
    which = (f"the sliding-window pool fills (swa token usage median {swa:.2f}, full {full:.2f})" if raise_it
             else f"the full-attention pool fills (full token usage median {full:.2f}, swa {swa:.2f})")
    if ratio is None:
        return [_advice(f"{which}: {'raise' if raise_it else 'lower'} --{SWA_RATIO} from the model's default "
                        "to give that pool more of the same memory")]
    new = round(min(1.0, ratio + SWA_RATIO_STEP) if raise_it else max(0.05, ratio - SWA_RATIO_STEP), 2)
    if new == ratio:
        return []
    return [_advice(f"{which}: --{SWA_RATIO} {ratio} -> {new} gives that pool more of the same memory",
                    {SWA_RATIO: new}, predictor)]


def _kv_bound(snapshot: Snapshot, sig: Signals, predictor: Predictor | None) -> list[dict[str, Any]]:
    out = _pool_split(snapshot, sig, predictor)
    fraction = _fraction(snapshot)
    if fraction is not None:
        higher = round(fraction + FRACTION_STEP, 2)
        out.append(_advice(f"raise --mem-fraction-static {fraction} -> {higher} for a larger KV pool "
                           "(see `predicted.risks` for the memory it takes)",
                           {"mem-fraction-static": higher}, predictor))
    if kv_width(snapshot.flags.get("kv-cache-dtype")) > 0.5:
        out.append(_advice("--kv-cache-dtype fp8_e4m3 halves the bytes a token takes (check quality first: "
                           "it may be vetoed)", {"kv-cache-dtype": "fp8_e4m3"}, predictor))
    if not snapshot.hicache:
        out.append(_advice("--enable-hierarchical-cache keeps evicted prefixes in host memory (no more GPU tokens)",
                           {"enable-hierarchical-cache": True}, predictor))
    if sig.running_p50:
        out.append(_advice(f"or send at most ~{sig.running_p50:.0f} requests at once from the client: the queue "
                           "adds latency, not throughput"))
    return out


def _capped(snapshot: Snapshot, sig: Signals, predictor: Predictor | None) -> list[dict[str, Any]]:
    room = _room(snapshot, sig)
    cap = snapshot.max_running_requests or 0
    target = int(room) if room is not None and room > cap else cap * 2
    return [_advice(f"raise --max-running-requests {cap} -> {target}"
                    + (f" (the KV pool holds ~{room:.0f} requests of this workload)" if room else ""),
                    {"max-running-requests": target}, predictor)]


def _client_bound(snapshot: Snapshot, sig: Signals, predictor: Predictor | None) -> list[dict[str, Any]]:
    room, running = _room(snapshot, sig), sig.running_p50 or 0.0
    if room is not None and room <= running * 1.05:
        text = (f"the client's {running:.0f} requests already fill the KV pool (room for ~{room:.0f} of "
                f"~{sig.tokens_per_request:,.0f} tokens): more concurrency would make the server KV-bound")
    elif room is not None:
        text = (f"raise the client's concurrency from {running:.0f} to ~{room:.0f}: the KV pool has room for that "
                f"many requests of ~{sig.tokens_per_request:,.0f} tokens")
    else:
        text = "raise the client's concurrency: the server has room for more requests"
    out = [_advice(text)]
    fraction = _fraction(snapshot)
    if fraction is not None and (sig.usage_p90 or 1.0) < 0.7:
        lower = round(fraction - FRACTION_STEP, 2)
        out.append(_advice(f"the pool is large for this load: --mem-fraction-static {lower} gives memory back "
                           "to activations at no cost now", {"mem-fraction-static": lower}, predictor))
    return out


def _retracting(snapshot: Snapshot, sig: Signals, predictor: Predictor | None) -> list[dict[str, Any]]:
    out = [_advice("--schedule-conservativeness 1.3 reserves more room for future tokens at admission, "
                   "so fewer requests are retracted", {"schedule-conservativeness": 1.3}, predictor)]
    if sig.running_p50:
        cap = max(int(sig.running_p50 * 0.9), 1)
        out.append(_advice(f"or cap admission below the thrashing point: --max-running-requests {cap}",
                           {"max-running-requests": cap}, predictor))
    return out + _kv_bound(snapshot, sig, predictor)[:2]


def suggestions(verdict: str, snapshot: Snapshot, sig: Signals, predictor: Predictor | None) -> list[dict[str, Any]]:
    if verdict == "kv_bound":
        return _kv_bound(snapshot, sig, predictor)
    if verdict == "concurrency_capped":
        return _capped(snapshot, sig, predictor)
    if verdict == "client_bound":
        return _client_bound(snapshot, sig, predictor)
    if verdict == "retracting":
        return _retracting(snapshot, sig, predictor)
    if verdict == "prefill_bound":
        size = snapshot.flags.get("chunked-prefill-size")
        size = size if isinstance(size, int) and size > 0 else 8192
        return [_advice(f"--chunked-prefill-size {size} -> {size * 2}: more prompt tokens per prefill batch, so the "
                        "queue is admitted faster (it costs activation memory)", {"chunked-prefill-size": size * 2},
                        predictor)]
    return [_advice(text) for text in STATIC.get(verdict, ())]


STATIC: dict[str, tuple[str, ...]] = {
    "degraded": ("the same concurrency ran faster earlier in this run: check GPU clocks and temperature "
                 "(gpu_* series), other processes on the GPUs, and the network for multi-node runs",),
    "hicache_idle": ("no prefix is reused: the hierarchical cache only costs host memory here; turn it off "
                     "(--enable-hierarchical-cache false) or check that prompts share their prefix",),
    "client_stalled": ("the server generates but nothing is persisted: check that the client process is alive, "
                       "its disk is not full, and it is writing to the configured outputs",),
    "client_buffered": ("run the client with `python -u` or PYTHONUNBUFFERED=1 so its log shows progress "
                        "as it happens",),
    "starting": ("wait for the warm-up: a diagnosis needs the steady state",),
    "idle": ("the server has nothing to do: check that the client is running and pointed at this server",),
}
