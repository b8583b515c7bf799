"""The vLLM flags a what-if on a vLLM host takes, checked without a schema of vLLM's own.

kvwatch restarts only SGLang servers, so it carries no vLLM argparse dump; a prediction for a vLLM host
needs just the flags the model knows: `--gpu-memory-utilization` (0 < u <= 1, a share of each GPU's
total memory for the whole instance), `--kv-cache-dtype`, `--max-num-seqs` and `--max-model-len`.
Anything else is refused by name (a prediction that ignored it would be a wrong one).
"""

from __future__ import annotations

from typing import Any

KV_CACHE_DTYPES = frozenset({"auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla"})
POSITIVE_INTS = frozenset({"max-num-seqs", "max-model-len"})


def _problem(name: str, value: object) -> str | None:
    if value is None:
        return None  # back to vLLM's default
    if name == "gpu-memory-utilization":
        ok = isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= 1
        return None if ok else f"{value!r}: a share of GPU memory, more than 0 and at most 1"
    if name in POSITIVE_INTS:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
        return None if ok else f"{value!r}: a whole number of at least 1"
    if name == "kv-cache-dtype":
        return None if value in KV_CACHE_DTYPES else f"{value!r} is not one of {', '.join(sorted(KV_CACHE_DTYPES))}"
    return "not a vLLM flag the prediction models (gpu-memory-utilization, kv-cache-dtype, max-num-seqs, max-model-len)"


def normalize_vllm(flags: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """(changes by canonical name, errors as {flag, message}) for a what-if on a vLLM host."""
    changes: dict[str, Any] = {}
    errors: list[dict[str, str]] = []
    for raw, value in flags.items():
        name = raw.removeprefix("--").replace("_", "-")
        problem = _problem(name, value)
        if problem is not None:
            errors.append({"flag": name, "message": problem})
        else:
            changes[name] = value
    return changes, errors
