"""KV capacity of a proposed config, from the running config's own startup lines.

SGLang sizes its KV pool after loading the weights:

    pool_bytes = available_after_weights - total_gpu_memory * (1 - mem_fraction_static)
    max_total_num_tokens = pool_bytes / bytes_per_token

Everything but the fraction stays the same when only `--mem-fraction-static` and the KV dtype
change, so the prediction moves from what the run logged rather than from first principles:

    kv_gib'   = kv_gib + total_gib * (f' - f)          the pool grows by total memory x the step
    per_token' = per_token * width(dtype') / width(dtype)   fp8 halves the bytes of a token
    tokens'   = kv_gib' / per_token'

vLLM sizes its pool the same way with `--gpu-memory-utilization`, a fraction of each GPU's TOTAL
memory that the whole instance (weights, activations, CUDA graphs and KV) may take:

    kv_bytes = total_gpu_memory * gpu_memory_utilization - weights - peak_activations - non_torch

so one step of the utilization moves the pool by total memory x the step, as SGLang's fraction does;
its startup lines give the pool (`Available KV cache memory: X GiB`, V0 `kv_cache_size=X GiB`) and the
tokens (`GPU KV cache size: N tokens`, else `Maximum concurrency for X tokens per request: Yx` as X x Y).
vLLM logs nothing like SGLang's memory left after CUDA-graph capture.

`per_token` is the logged pool size over the logged token count (`KV Cache is allocated. #tokens:
N, KV size: X GB`), so it is this model on this host, MLA latent or not. The memory the larger pool
takes comes out of what was left after CUDA-graph capture (`available_gpu_mem`, logged by the
capacity line): more than that cannot be taken at all.
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = float(1 << 30)  # SGLang's "GB" in these lines is 2**30 bytes
KV_WIDTH = {  # bytes of one KV element relative to bf16
    "fp8_e5m2": 0.5, "fp8_e4m3": 0.5, "mxfp8": 0.5, "fp8": 0.5,
    "fp4_e2m1": 0.25, "nvfp4": 0.25, "fp4_mx_block16": 0.25,
}


def kv_width(kv_cache_dtype: object) -> float:
    """1.0 for bf16 (`auto`, `bf16`, `bfloat16`), 0.5 for the fp8 dtypes, 0.25 for fp4."""
    return KV_WIDTH.get(str(kv_cache_dtype or "auto").lower(), 1.0)


def kv_label(kv_cache_dtype: object) -> str:
    text = str(kv_cache_dtype or "auto")
    return "bf16" if text in ("auto", "bfloat16", "None") else text


@dataclass(frozen=True, slots=True)
class Startup:
    """What one run logged about its memory when it started (GiB per GPU)."""

    max_total_num_tokens: int
    kv_gib: float | None  # the KV pool (`KV size`, or K size + V size)
    available_after_graphs_gib: float | None  # `available_gpu_mem` of the capacity line
    max_running_requests: int | None
    engine: str = "sglang"  # "vllm" when the startup lines are vLLM's
    max_model_len: int | None = None  # vLLM's `Maximum concurrency for X tokens per request` X

    @property
    def bytes_per_token(self) -> float | None:
        if self.kv_gib is None or self.max_total_num_tokens <= 0:
            return None
        return self.kv_gib * GIB / self.max_total_num_tokens


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _kv_gib(kv: dict[str, object]) -> float | None:
    for name in ("kv_size", "available_kv_cache_memory", "kv_cache_size_gib"):  # SGLang, vLLM V1, vLLM V0
        if (value := _number(kv.get(name))) is not None:
            return value
    k_size, v_size = _number(kv.get("k_size")), _number(kv.get("v_size"))
    return k_size + v_size if k_size is not None and v_size is not None else None


def is_vllm(capacity: dict[str, object]) -> bool:
    kv = capacity.get("kv_cache")
    logged = set(capacity) | (set(kv) if isinstance(kv, dict) else set())
    return bool(logged & {"available_kv_cache_memory", "kv_cache_size_gib", "max_concurrency", "gpu_blocks"})


def startup_from_capacity(capacity: dict[str, object]) -> Startup | None:
    """A run's `capacity` dict (capacity line fields plus `kv_cache`) as a Startup; None without tokens."""
    tokens = _number(capacity.get("max_total_num_tokens"))
    length, concurrency = _number(capacity.get("max_model_len")), _number(capacity.get("max_concurrency"))
    if tokens is None and length is not None and concurrency is not None:
        tokens = length * concurrency  # vLLM V0 logs blocks, not tokens: the concurrency line gives them
    if tokens is None:
        return None
    kv = capacity.get("kv_cache")
    running = _number(capacity.get("max_running_requests"))
    return Startup(
        max_total_num_tokens=int(tokens),
        kv_gib=_kv_gib(kv) if isinstance(kv, dict) else None,
        available_after_graphs_gib=_number(capacity.get("available_gpu_mem")),
        max_running_requests=int(running) if running is not None else None,
        engine="vllm" if is_vllm(capacity) else "sglang",
        max_model_len=int(length) if length is not None else None,
    )


@dataclass(frozen=True, slots=True)
class MemoryChange:
    """The proposed pool next to the running one."""

    tokens: int | None
    kv_gib: float | None
    added_gib: float  # memory the pool takes beyond the running one (negative: gives back)
    left_after_graphs_gib: float | None  # what the running config left, less the added pool
    basis: str


def predict_pool(
    startup: Startup,
    fraction: float,
    new_fraction: float,
    dtype: object,
    new_dtype: object,
    total_gib: float | None,
    fraction_flag: str = "mem-fraction-static",
) -> MemoryChange:
    """The KV pool of (new_fraction, new_dtype) from a run that started at (fraction, dtype)."""
    step = new_fraction - fraction
    if step != 0 and total_gib is None:
        return MemoryChange(None, None, 0.0, startup.available_after_graphs_gib,
                            f"total GPU memory unknown: cannot size a different --{fraction_flag}")
    added = (total_gib or 0.0) * step
    left = None if startup.available_after_graphs_gib is None else startup.available_after_graphs_gib - added
    ratio = kv_width(new_dtype) / kv_width(dtype)
    if startup.kv_gib is None:
        if step != 0:
            return MemoryChange(None, None, added, left, "the startup lines give no KV pool size")
        tokens = int(startup.max_total_num_tokens / ratio)
        return MemoryChange(tokens, None, 0.0, left,
                            f"{startup.max_total_num_tokens} tokens x {1 / ratio:g} (KV dtype width)")
    per_token = startup.kv_gib * GIB / startup.max_total_num_tokens
    kv_gib = max(startup.kv_gib + added, 0.0)
    tokens = int(kv_gib * GIB / (per_token * ratio))
    basis = (
        f"KV pool {startup.kv_gib:.2f} GiB for {startup.max_total_num_tokens} tokens "
        f"({per_token:,.0f} bytes/token as logged)"
    )
    if step:
        basis += f"; {step:+.3f} x {total_gib:.1f} GiB GPU memory = {added:+.2f} GiB of pool"
    if ratio != 1.0:
        basis += f"; {kv_label(new_dtype)} KV takes {ratio:g}x the bytes of {kv_label(dtype)}"
    return MemoryChange(tokens, kv_gib, added, left, basis + f" -> {kv_gib:.2f} GiB, {tokens} tokens")
