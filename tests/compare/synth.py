"""A small deterministic writer of SGLang 0.5.x server logs with known true rates.

Each run: the `server_args=` dump, the KV-cache and capacity lines, the ready line, then decode lines
about every 1.2 s (jittered) and prefill lines at the true admission rate. Levels start in a warm-up
burst (everything admitted at once: running and queue high, throughput high, usage low) that decays
exponentially to the true steady values, then wander around them (AR(1) noise: correlated, like a
real batch). The true medians are the steady values, since the noise is symmetric.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import numpy as np

DECODE_EVERY_S = 1.2


@dataclass(frozen=True)
class Truth:
    gen_throughput: float
    running_req: float
    token_usage: float
    queue_req: float
    completion_rate: float  # per second


@dataclass(frozen=True)
class RunSpec:
    flags: dict[str, Any]
    max_total_num_tokens: int
    truth: Truth
    duration_s: float = 3600.0
    warmup_s: float = 240.0  # time constant of the burst's decay
    noise: float = 0.05  # relative sd of the stationary noise
    burst: dict[str, float] = field(
        default_factory=lambda: {
            "gen_throughput": 1.8,
            "running_req": 1.6,
            "token_usage": 0.15,
            "queue_req": 1.9,
        }
    )


def stamp(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def server_args_text(flags: dict[str, Any]) -> str:
    args = {"model_path": "/models/Kimi-K2.5", "tp_size": 8, "port": 30000, "random_seed": 7, **flags}
    return "server_args=ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")"


def startup_lines(spec: RunSpec, t0: float) -> tuple[list[str], float]:
    cap = spec.max_total_num_tokens
    running = int(spec.flags.get("max_running_requests", 150))
    lines = [
        f"[{stamp(t0)}] {server_args_text(spec.flags)}",
        f"[{stamp(t0 + 30)} TP0] KV Cache is allocated. #tokens: {cap}, KV size: {cap * 69 / 1e6:.2f} GB",
        f"[{stamp(t0 + 40)} TP0] max_total_num_tokens={cap}, chunked_prefill_size=8192, "
        f"max_prefill_tokens=16384, max_running_requests={running}, "
        "context_len=262144, available_gpu_mem=5.47 GB",
        f"[{stamp(t0 + 42)}] The server is fired up and ready to roll!",
    ]
    return lines, t0 + 42


def _ar1(rng: np.random.Generator, n: int, phi: float = 0.9) -> np.ndarray:
    shocks = rng.normal(0.0, np.sqrt(1 - phi**2), n)
    out = np.empty(n)
    level = rng.normal()
    for i in range(n):
        level = phi * level + shocks[i]
        out[i] = level
    return out


def level_values(spec: RunSpec, t_rel: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    decay = np.exp(-t_rel / spec.warmup_s)
    out = {}
    for metric in ("gen_throughput", "running_req", "token_usage", "queue_req"):
        true = getattr(spec.truth, metric)
        start = spec.burst[metric] * max(true, 40.0 if metric == "queue_req" else true)
        scale = true if true > 0 else 1.0
        out[metric] = true + (start - true) * decay + spec.noise * scale * _ar1(rng, len(t_rel))
    out["token_usage"] = np.clip(out["token_usage"], 0.0, 1.0)
    out["queue_req"] = np.maximum(out["queue_req"], 0.0)
    return out


def decode_line(t: float, running: float, usage: float, tps: float, queue: float, cap: int) -> str:
    return (
        f"[{stamp(t)}] Decode batch, #running-req: {round(running)}, #token: {round(usage * cap)}, "
        f"token usage: {usage:.2f}, cuda graph: True, gen throughput (token/s): {tps:.2f}, "
        f"#queue-req: {round(queue)}, "
    )


def prefill_line(t: float, usage: float, running: float, queue: float) -> str:
    return (
        f"[{stamp(t)}] Prefill batch, #new-seq: 1, #new-token: 812, #cached-token: 0, token usage: "
        f"{usage:.2f}, #running-req: {round(running)}, #queue-req: {round(queue)}, "
    )


def run_lines(spec: RunSpec, t0: float, seed: int) -> tuple[list[str], float]:
    """All lines of one run starting at epoch `t0`; returns them and the time of the last line."""
    rng = np.random.default_rng(seed)
    lines, ready = startup_lines(spec, t0)
    gaps = rng.uniform(0.6 * DECODE_EVERY_S, 1.4 * DECODE_EVERY_S, int(spec.duration_s / DECODE_EVERY_S) + 2)
    times = ready + np.cumsum(gaps)
    times = times[times < ready + spec.duration_s]
    levels = level_values(spec, times - ready, rng)
    admissions = ready + np.cumsum(
        rng.exponential(1 / spec.truth.completion_rate, int(spec.duration_s * spec.truth.completion_rate * 1.5) + 10)
    )
    admissions = admissions[admissions < times[-1]]
    events = [(t, "d", i) for i, t in enumerate(times)] + [(t, "p", 0) for t in admissions]
    for t, what, i in sorted(events):
        j = min(int(np.searchsorted(times, t)), len(times) - 1)
        if what == "d":
            lines.append(
                decode_line(
                    t,
                    levels["running_req"][i],
                    levels["token_usage"][i],
                    levels["gen_throughput"][i],
                    levels["queue_req"][i],
                    spec.max_total_num_tokens,
                )
            )
        else:
            lines.append(prefill_line(t, levels["token_usage"][j], levels["running_req"][j], levels["queue_req"][j]))
    return lines, float(times[-1])


# The three configs of the-run-it-serves.md, with true steady values inside its measured ranges.
THREE_CONFIGS = (
    RunSpec(
        {"mem_fraction_static": 0.85},
        116_000,
        Truth(gen_throughput=720.0, running_req=42.0, token_usage=0.93, queue_req=95.0, completion_rate=0.17),
    ),
    RunSpec(
        {"mem_fraction_static": 0.88, "enable_hierarchical_cache": True, "hicache_size": 48},
        159_000,
        Truth(gen_throughput=930.0, running_req=72.0, token_usage=0.96, queue_req=79.0, completion_rate=0.23),
    ),
    RunSpec(
        {
            "mem_fraction_static": 0.90,
            "kv_cache_dtype": "fp8_e4m3",
            "enable_hierarchical_cache": True,
            "hicache_size": 48,
        },
        376_000,
        Truth(gen_throughput=1380.0, running_req=150.0, token_usage=0.62, queue_req=0.0, completion_rate=0.34),
    ),
)
EPOCH0 = dt.datetime(2026, 2, 24, 12, 0, tzinfo=dt.UTC).timestamp()


def write_log(path: Any, specs: tuple[RunSpec, ...], seed: int = 1, gap_s: float = 60.0) -> list[tuple[float, float]]:
    """Runs one after another in one log (restarts); returns each run's (start, ready) epoch times."""
    lines: list[str] = []
    t = EPOCH0
    starts = []
    for i, spec in enumerate(specs):
        run, last = run_lines(spec, t, seed + i)
        starts.append((t, t + 42))
        lines.extend(run)
        t = last + gap_s
    path.write_text("\n".join(lines) + "\n")
    return starts
