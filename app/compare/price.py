"""The price of a config choice in one sentence, from a comparison:

    bf16 KV instead of fp8_e4m3, mem-fraction-static 0.88 instead of 0.9: -58 % KV tokens,
    -52 % concurrency, -33 % tok/s, queue 0 -> 79

one sentence per run against the baseline: the flags that differ (the run's value "instead of" the
baseline's), then the change of KV tokens, running requests and throughput, and the queue before -> after.
"""

from __future__ import annotations

from typing import Any

from kvwatch.app.metrics_catalog.names import GEN_THROUGHPUT, QUEUE_REQ, RUNNING_REQ

CHANGES = (("max_total_num_tokens", "KV tokens"), (RUNNING_REQ, "concurrency"), (GEN_THROUGHPUT, "tok/s"))
KV_DTYPE = "kv-cache-dtype"


def _value(flag: str, value: object) -> str:
    if flag == KV_DTYPE:
        return "bf16" if value in (None, "auto", "bf16", "bfloat16") else str(value)
    if value is None or value is False:
        return "off"
    return "on" if value is True else str(value)


def _choice(diff: list[dict[str, Any]], index: int, baseline: int) -> str:
    parts = []
    for entry in sorted(diff, key=lambda e: e["flag"] != KV_DTYPE):  # the KV dtype, when it changed, first
        flag, values = entry["flag"], entry["values"]
        mine, theirs = _value(flag, values[index]), _value(flag, values[baseline])
        if mine == theirs:
            continue
        if flag == KV_DTYPE:
            parts.append(f"{mine} KV instead of {theirs}")
        else:
            parts.append(f"{flag} {mine} instead of {theirs}")
    return ", ".join(parts) or "same flags"


def _rows(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["metric"]: row for row in result["rows"]}


def _queue(value: object) -> str:
    return f"{value:.0f}" if isinstance(value, int | float) else "n/a"


def sentence(result: dict[str, Any], index: int, baseline: int) -> str:
    rows = _rows(result)
    changes = []
    for metric, label in CHANGES:
        pct = rows[metric]["change_pct"][index] if metric in rows else None
        changes.append(f"{pct:+.0f} % {label}" if isinstance(pct, int | float) else f"n/a {label}")
    queue = rows.get(QUEUE_REQ, {}).get("values") or [None] * len(result["runs"])
    changes.append(f"queue {_queue(queue[baseline])} -> {_queue(queue[index])}")
    return f"{_choice(result.get('flag_diff', []), index, baseline)}: {', '.join(changes)}"


def price(result: dict[str, Any]) -> list[dict[str, str]]:
    """One {run, sentence} per run other than the baseline."""
    ids = [run["id"] for run in result["runs"]]
    baseline = ids.index(result["baseline"])
    return [{"run": run_id, "sentence": sentence(result, i, baseline)} for i, run_id in enumerate(ids) if i != baseline]
