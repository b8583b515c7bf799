"""The job across hosts: sums of what adds up, the most common config, and each run's difference from it."""

from __future__ import annotations

from collections import Counter
from typing import Any

from kvwatch.app.metrics_catalog.names import COMPLETIONS, GEN_THROUGHPUT

Row = dict[str, Any]


def _sum(rows: list[Row], key: str) -> float | None:
    values = [row[key] for row in rows if row.get(key) is not None]
    return float(sum(values)) if values else None


def job_totals(rows: list[Row]) -> dict[str, Any]:
    """Summed tok/s, completions and targets; the job's ETA at the hosts' summed pace (None while any
    host with a target has no pace: the job ends when its slowest part does, not on average)."""
    targets = [row for row in rows if row.get("target_completions")]
    remaining = sum(max(0.0, row["target_completions"] - (row.get(COMPLETIONS) or 0.0)) for row in targets)
    pace = _sum(targets, "completion_pace")
    eta_s = None
    if targets and pace:
        eta_s = 0.0 if remaining == 0 else remaining / pace
    host_etas = [row.get("eta_s") for row in targets]
    slowest = [float(s) for s in host_etas if s is not None] if all(s is not None for s in host_etas) else []
    return {
        "hosts": len(rows),
        GEN_THROUGHPUT: _sum(rows, GEN_THROUGHPUT),
        COMPLETIONS: _sum(rows, COMPLETIONS),
        "target_completions": _sum(targets, "target_completions"),
        "completion_pace": pace,
        "eta_s": eta_s,
        # the job is done when its last host is: the largest host ETA, when every host has one
        "last_host_eta_s": max(slowest) if slowest else None,
    }


def common_flags(rows: list[Row]) -> dict[str, Any]:
    """The defining flags most runs have (the first such in host order on a tie); {} without runs."""
    configs = [tuple(sorted((k, repr(v)) for k, v in row["flags"].items())) for row in rows
               if row.get("flags") is not None]
    if not configs:
        return {}
    counts = Counter(configs)
    best = max(counts.values())
    chosen = next(config for config in configs if counts[config] == best)
    return next(row["flags"] for row in rows if row.get("flags") is not None
                and tuple(sorted((k, repr(v)) for k, v in row["flags"].items())) == chosen)


def flag_difference(flags: dict[str, Any] | None, common: dict[str, Any]) -> dict[str, Any]:
    """What a run sets differently from the common config (None: it leaves a common flag unset)."""
    if flags is None:
        return {}
    out: dict[str, Any] = {k: v for k, v in flags.items() if common.get(k, object()) != v}
    out.update({k: None for k in common if k not in flags})
    return out


def group_totals(rows: list[Row]) -> dict[str, dict[str, Any]]:
    """job_totals per `group` (the hosts configured with one), in the order groups first appear."""
    groups: dict[str, list[Row]] = {}
    for row in rows:
        if row.get("group"):
            groups.setdefault(row["group"], []).append(row)
    return {name: job_totals(members) for name, members in groups.items()}
