"""Which host needs a person first. One ordered registry: a row takes the first rank whose test holds.

Firing alerts lead (something crossed a line the owner set), then runs in trouble (stalled, degraded,
thrashing, a host that cannot be read), then KV-bound runs (working, but the config is the limit),
then the rest. Within a rank, rows keep the configured host order."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Row = dict[str, Any]

TROUBLE_VERDICTS = frozenset({"client_stalled", "degraded", "retracting"})
UNREADABLE_STATES = frozenset({"reconnecting", "failed"})  # collectors/health.py HostState


def _firing(row: Row) -> str | None:
    firing = [a["rule"] for a in row.get("alerts", ()) if a.get("state") == "firing"]
    return f"firing: {', '.join(firing)}" if firing else None


def _trouble(row: Row) -> str | None:
    if row.get("collector_state") in UNREADABLE_STATES:
        return f"collector {row['collector_state']}"
    verdict = row.get("verdict")
    return f"verdict: {row.get('verdict_label') or verdict}" if verdict in TROUBLE_VERDICTS else None


def _kv_bound(row: Row) -> str | None:
    return "KV-bound" if row.get("verdict") == "kv_bound" else None


@dataclass(frozen=True, slots=True)
class Rank:
    name: str
    test: Callable[[Row], str | None]  # the reason this row is of the rank, or None


RANKS: tuple[Rank, ...] = (Rank("alert", _firing), Rank("trouble", _trouble), Rank("kv_bound", _kv_bound))


def attention(row: Row) -> tuple[int, str, str | None]:
    """(rank index, rank name, reason); rows no rank claims come last as "ok"."""
    for index, rank in enumerate(RANKS):
        reason = rank.test(row)
        if reason is not None:
            return index, rank.name, reason
    return len(RANKS), "ok", None


def ordered(rows: list[Row]) -> list[Row]:
    """`rows` with their `attention` and `attention_reason`, most urgent first (stable within a rank)."""
    ranked = []
    for position, row in enumerate(rows):
        index, name, reason = attention(row)
        ranked.append((index, position, {**row, "attention": name, "attention_reason": reason}))
    return [row for _, _, row in sorted(ranked, key=lambda item: (item[0], item[1]))]
