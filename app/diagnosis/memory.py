"""KV capacity of a proposed config, from the running config's own startup lines.

SGLang sizes its KV pool after loading the weights:

    pool_bytes = available_after_weights - total_gpu_memory * (1 - mem_fraction_static)
    max_total_num_tokens = pool_bytes / bytes_per_token

Everything but the fraction stays the same when only `--mem-fraction-static` and the KV dtype
change, so the prediction moves from what the run logged rather than from first principles:

    kv_gib'   = kv_gib + total_gib * (f' - f)          the pool grows by total memory x the step
    per_token' = per_token * width(dtype') / width(dtype)   fp8 halves the bytes of a token
    tokens'   = kv_gib' / per_token'

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

    @property
    def bytes_per_token(self) -> float | None:
        if self.kv_gib is None or self.max_total_num_tokens <= 0:
            return None
        return self.kv_gib * GIB / self.max_total_num_tokens


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def startup_from_capacity(capacity: dict[str, object]) -> Startup | None:
    """A run's `capacity` dict (capacity line fields plus `kv_cache`) as a Startup; None without tokens."""
    tokens = _number(capacity.get("max_total_num_tokens"))
    if tokens is None:
        return None
    kv = capacity.get("kv_cache")
    kv_gib = None
    if isinstance(kv, dict):
        kv_gib = _number(kv.get("kv_size"))
        k_size, v_size = _number(kv.get("k_size")), _number(kv.get("v_size"))
        if kv_gib is None and k_size is not None and v_size is not None:
            kv_gib = k_size + v_size
    running = _number(capacity.get("max_running_requests"))
    return Startup(
        max_total_num_tokens=int(tokens),
        kv_gib=kv_gib,
        available_after_graphs_gib=_number(capacity.get("available_gpu_mem")),
        max_running_requests=int(running) if running is not None else None,
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
) -> MemoryChange:
    """The KV pool of (new_fraction, new_dtype) from a run that started at (fraction, dtype)."""
    step = new_fraction - fraction
    if step != 0 and total_gib is None:
        return MemoryChange(None, None, 0.0, startup.available_after_graphs_gib,
                            "total GPU memory unknown: cannot size a different --mem-fraction-static")
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
