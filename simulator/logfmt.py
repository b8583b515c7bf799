"""SGLang's log line shapes, version by version (facts: reference/sglang-and-vllm-log-formats.md).

Only the message text lives here; `LogWriter` adds the `[time tags] ` prefix. A `VersionFormat`
names each difference between releases once, so a new release is one more row in VERSIONS.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class VersionFormat:
    version: str
    datefmt: str  # strftime format of the bracketed time
    tp_tag_always: bool  # " TP0" even at tp=1 (up to 0.4.6)
    batch_sep: str  # "Decode batch." (<=0.5.3) or "Decode batch," (0.5.5+)
    trailing_comma: bool  # Decode and Prefill end with ", " (0.4.10-0.5.8)
    cuda_graph_field: bool  # Decode has "cuda graph: True" (0.4.7+)
    prefill_style: str  # "hit_rate" (<=0.4.3), "usage" (0.4.6-0.5.8), "pending" (0.5.13+)
    capacity_style: str  # "old" (no chunked), "chunked", "gpu_mem" (0.4.7+)
    capacity_every_rank: bool  # every TP rank logs the capacity line (up to 0.4.6)
    kv_style: str  # "none", "tokens" (0.4.6-0.5.8), "dtype" (0.5.13+)
    server_args_style: str  # "none", "dataclass" (ServerArgs(...)), "dict" (0.5.23)
    retract_style: str  # "decode_oom" (<=0.4.6), "pool_full" (0.4.7-0.5.5), "gained" (0.5.8+)
    load_weight_style: str  # "dtype" (<=0.4.3), "usage" (0.4.6-0.5.8), "elapsed" (0.5.13+)
    uvicorn_bracketed: bool  # "[time] INFO:     ..." (0.3.6+) or plain uvicorn "INFO:     ..."
    sigterm_style: str  # "plain" (uvicorn shuts down), "drain" (tokenizer manager drains, kills its tree)


VERSIONS: dict[str, VersionFormat] = {
    v.version: v
    for v in (
        VersionFormat("0.3.0", "%H:%M:%S", True, ".", False, False, "hit_rate", "old", True,
                      "none", "none", "decode_oom", "dtype", False, "plain"),
        VersionFormat("0.4.6", "%Y-%m-%d %H:%M:%S", True, ".", False, False, "usage", "chunked", True,
                      "tokens", "dataclass", "decode_oom", "usage", True, "drain"),
        VersionFormat("0.4.10", "%Y-%m-%d %H:%M:%S", False, ".", True, True, "usage", "gpu_mem", False,
                      "tokens", "dataclass", "pool_full", "usage", True, "drain"),
        VersionFormat("0.5.8", "%Y-%m-%d %H:%M:%S", False, ",", True, True, "usage", "gpu_mem", False,
                      "tokens", "dataclass", "gained", "usage", True, "drain"),
        VersionFormat("0.5.23", "%Y-%m-%d %H:%M:%S", False, ",", False, True, "pending", "gpu_mem", False,
                      "dtype", "dict", "gained", "elapsed", True, "drain"),
    )
}
DEFAULT_VERSION = "0.5.23"


def rank_tag(fmt: VersionFormat, tp_rank: int, tp_size: int, dp_rank: int | None) -> str:
    """The ` DPn TPn` part of the prefix (leading space included), by the version's rule."""
    parts = []
    if dp_rank is not None:
        parts.append(f"DP{dp_rank}")
    if fmt.tp_tag_always or tp_size > 1:
        parts.append(f"TP{tp_rank}")
    return "".join(" " + p for p in parts)


def _end(fmt: VersionFormat, body: str) -> str:
    return body + ", " if fmt.trailing_comma else body


def decode_line(fmt: VersionFormat, running: int, tokens: int, usage: float, gen_tps: float,
                queue: int, cuda_graph: bool) -> str:
    body = (f"Decode batch{fmt.batch_sep} #running-req: {running}, #token: {tokens}, "
            f"token usage: {usage:.2f}, ")
    if fmt.cuda_graph_field:
        body += f"cuda graph: {cuda_graph}, "
    body += f"gen throughput (token/s): {gen_tps:.2f}, #queue-req: {queue}"
    return _end(fmt, body)


def prefill_line(fmt: VersionFormat, new_seq: int, new_token: int, cached: int, usage: float,
                 running: int, queue: int, hit_rate: float, pending: int, input_tps: float) -> str:
    head = (f"Prefill batch{fmt.batch_sep} #new-seq: {new_seq}, #new-token: {new_token}, "
            f"#cached-token: {cached}, ")
    if fmt.prefill_style == "hit_rate":
        return head + (f"cache hit rate: {100.0 * hit_rate:.2f}%, #running-req: {running}, "
                       f"#queue-req: {queue}")
    body = head + f"token usage: {usage:.2f}, #running-req: {running}, #queue-req: {queue}"
    if fmt.prefill_style == "usage":
        return _end(fmt, body)
    return body + (f", #pending-token: {pending}, cuda graph: False, "
                   f"input throughput (token/s): {input_tps:.2f}")


def capacity_line(fmt: VersionFormat, max_total: int, chunked: int, max_prefill: int, max_running: int,
                  context_len: int, available_gpu_mem: float) -> str:
    if fmt.capacity_style == "old":
        return (f"max_total_num_tokens={max_total}, max_prefill_tokens={max_prefill}, "
                f"max_running_requests={max_running}, context_len={context_len}")
    line = (f"max_total_num_tokens={max_total}, chunked_prefill_size={chunked}, "
            f"max_prefill_tokens={max_prefill}, max_running_requests={max_running}, "
            f"context_len={context_len}")
    if fmt.capacity_style == "gpu_mem":
        line += f", available_gpu_mem={available_gpu_mem:.2f} GB"
    return line


def kv_cache_line(fmt: VersionFormat, tokens: int, kv_gb: float, torch_dtype: str, mla: bool) -> str | None:
    if fmt.kv_style == "none":
        return None
    sizes = f"KV size: {kv_gb:.2f} GB" if mla else f"K size: {kv_gb / 2:.2f} GB, V size: {kv_gb / 2:.2f} GB"
    if fmt.kv_style == "tokens":
        return f"KV Cache is allocated. #tokens: {tokens}, {sizes}"
    return f"KV Cache is allocated. dtype: {torch_dtype}, #tokens: {tokens}, {sizes}"


def server_args_line(fmt: VersionFormat, args: dict[str, Any]) -> str | None:
    if fmt.server_args_style == "none":
        return None
    if fmt.server_args_style == "dict":
        return f"server_args={args!r}"
    inner = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return f"server_args=ServerArgs({inner})"


def retract_line(fmt: VersionFormat, retracted: int, gained: int, old_ratio: float, new_ratio: float) -> str:
    ratio = f"#new_token_ratio: {old_ratio:.4f} -> {new_ratio:.4f}"
    if fmt.retract_style == "decode_oom":
        return f"Decode out of memory happened. #retracted_reqs: {retracted}, {ratio}"
    if fmt.retract_style == "pool_full":
        return f"KV cache pool is full. Retract requests. #retracted_reqs: {retracted}, {ratio}"
    return (f"KV cache pool is full. Retract requests. #retracted_reqs: {retracted}, "
            f"#new_tokens_gained: {gained}, {ratio}")


def load_weight_end(fmt: VersionFormat, arch: str, avail: float, usage: float, elapsed: float) -> str:
    if fmt.load_weight_style == "dtype":
        return f"Load weight end. type={arch}, dtype=torch.bfloat16, avail mem={avail:.2f} GB"
    if fmt.load_weight_style == "usage":
        return (f"Load weight end. type={arch}, dtype=torch.bfloat16, avail mem={avail:.2f} GB, "
                f"mem usage={usage:.2f} GB.")
    return (f"Load weight end. elapsed={elapsed:.2f} s, type={arch}, quant=compressed-tensors, "
            f"avail mem={avail:.2f} GB, mem usage={usage:.2f} GB.")


def hicache_line(fmt: VersionFormat, size_gb: float, tokens: int) -> str:
    if fmt.kv_style == "dtype":
        return f"Allocating MLA hierarchical KV host pool: {tokens} tokens, {size_gb:.2f} GB host memory."
    return f"Allocating {size_gb:.2f} GB host memory for hierarchical KV cache."


def uvicorn_prefix(fmt: VersionFormat, stamp: str) -> str:
    """uvicorn's own lines: bracketed time then `INFO:     ` (0.3.6+), or bare uvicorn (0.3.0)."""
    return f"[{stamp}] INFO:     " if fmt.uvicorn_bracketed else "INFO:     "


STATUS_PHRASES = {200: "OK", 400: "Bad Request", 404: "Not Found", 503: "Service Unavailable"}


def access_line(client: str, method: str, path: str, status: int) -> str:
    return f'{client} - "{method} {path} HTTP/1.1" {status} {STATUS_PHRASES.get(status, "")}'.rstrip()


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def at_least(version: str, floor: str) -> bool:
    return version_key(version) >= version_key(floor)
