"""A hybrid model's KV pools, totalled as SGLang's own scheduler totals them.

A model with sliding-window layers (gpt-oss, MiMo, Llama 4, DeepSeek-V4) or Mamba layers (Qwen3-Next)
keeps several pools, and its batch lines log each one instead of `#token` / `token usage`:

    Decode batch, #running-req: 56, #full token: 20224, full token usage: 0.00, #swa token: 14976,
    swa token usage: 0.05, ..., gen throughput (token/s): 1234.56, #queue-req: 0
    Prefill batch, ..., full token usage: 0.01, mamba usage: 0.40, #running-req: 3, ...

SGLang's `PoolStats` (sglang/srt/managers/scheduler_pool_stats.py, 0.5.x) reports the fullest pool
as the server's token usage (`sglang:token_usage` = max of full, swa and mamba usage) and the larger
of the full and swa pools' counts as its used tokens (`num_used_tokens`; a mamba pool counts request
slots, not tokens). The record gets those as `token_usage` and `token`, so the usage chart, the
0.95 alert, the diagnosis and the comparison read a hybrid run like any other; the per-pool fields
stay as logged. A line that logs `token usage` itself is left alone.
"""

from __future__ import annotations

from typing import Any

USAGE_PARTS = ("full_token_usage", "swa_token_usage", "mamba_usage")
TOKEN_PARTS = ("full_token", "swa_token")


def _fullest(record: dict[str, Any], parts: tuple[str, ...]) -> int | float | None:
    values = [record[name] for name in parts if isinstance(record.get(name), int | float)
              and not isinstance(record.get(name), bool)]
    return max(values) if values else None


def add_pool_totals(record: dict[str, Any]) -> None:
    """Add `token_usage` and `token` to a batch record that logs per-pool values only."""
    if "token_usage" not in record:
        usage = _fullest(record, USAGE_PARTS)
        if usage is not None:
            record["token_usage"] = usage
    if "token" not in record and "full_token" in record:
        used = _fullest(record, TOKEN_PARTS)
        if used is not None:
            record["token"] = used
