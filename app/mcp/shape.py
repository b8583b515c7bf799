"""What the tools answer: the API's answers cut to what an agent decides with, each number with its
unit. Pure (no I/O, no SDK): `kvwatch status --json` trims its flags with `trimmed_status` too.

An answer stays under ANSWER_LIMIT bytes of JSON: lists are cut to a few entries, flags to the run's
non-default ones (SGLang logs about 500 arguments at start; a run is defined by the few it changed).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from kvwatch.app.metrics_catalog import info
from kvwatch.app.metrics_catalog.names import (
    COMPLETION_RATE,
    COMPLETIONS,
    GEN_THROUGHPUT,
    QUEUE_REQ,
    RUNNING_REQ,
    TOKEN_USAGE,
)

ANSWER_LIMIT = 4096  # bytes of JSON per tool answer
NOW_ROW = (GEN_THROUGHPUT, TOKEN_USAGE, RUNNING_REQ, QUEUE_REQ, COMPLETIONS, COMPLETION_RATE)
ALERT_KEYS = ("rule", "state", "severity", "since", "summary")
MAX_ITEMS = 6  # evidence, suggestions, alerts, risks: more than this is noise to an agent


def trimmed_status(status: dict[str, Any], all_flags: bool = False) -> dict[str, Any]:
    """/status with `run.flags` the run's non-default flags (its `defining_flags`), unless `all_flags`."""
    run = status.get("run")
    if all_flags or not isinstance(run, dict) or "defining_flags" not in run:
        return status
    slim = {k: v for k, v in run.items() if k != "defining_flags"}
    return {**status, "run": {**slim, "flags": run["defining_flags"]}}


def measured(metric: str, value: Any, at: float | None = None) -> dict[str, Any] | None:
    """A number with its catalog unit and label (and when it was sampled); None stays None."""
    if value is None:
        return None
    entry = info(metric)
    out: dict[str, Any] = {"value": _round(value), "unit": entry.unit, "label": entry.label}
    if at is not None:
        out["sampled_at"] = at
    return out


def _round(value: Any) -> Any:
    return round(value, 4) if isinstance(value, float) else value


def run_view(run: dict[str, Any] | None) -> dict[str, Any] | None:
    if not run:
        return None
    flags = run.get("defining_flags", run.get("flags"))
    return {"id": run.get("id"), "state": run.get("state"), "started_at": run.get("started_at"),
            "ready_at": run.get("ready_at"), "non_default_flags": flags}


def alerts_view(alerts: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: a.get(k) for k in ALERT_KEYS if a.get(k) is not None} for a in list(alerts)[:MAX_ITEMS]]


def status_view(status: dict[str, Any], verdict: str | None) -> dict[str, Any]:
    """The `status` tool's answer: the now row with units, the run's non-default flags, progress."""
    sampled = status.get("sampled_at") or {}
    now = {m: measured(m, status.get(m), sampled.get(m)) for m in NOW_ROW}
    mean = status.get("gen_throughput_mean")
    return {
        "host": status.get("host"),
        "as_of": status.get("as_of"),
        "collector": (status.get("collector") or {}).get("state"),
        "verdict": verdict,
        "run": run_view(status.get("run")),
        "now": {k: v for k, v in now.items() if v is not None},
        "gen_throughput_mean": None if mean is None else {
            **(measured(GEN_THROUGHPUT, mean) or {}), "over_last_s": status.get("mean_window_s")},
        "progress": {COMPLETIONS: status.get(COMPLETIONS), "target": status.get("target_completions"),
                     "eta_s": _round(status.get("eta_s")), "client": _client(status.get("client"))},
        "alerts": alerts_view(status.get("alerts") or []),
    }


def _client(client: dict[str, Any] | None) -> dict[str, Any] | None:
    if not client:
        return None
    return {"done": client.get("done"), "total": client.get("total"), "silent": client.get("silent")}


def host_row(host: dict[str, Any], status: dict[str, Any] | None, verdict: str | None) -> dict[str, Any]:
    """One line of the `hosts` tool: name, up/down, current run, verdict, open alerts."""
    run = (status or {}).get("run") or {}
    return {
        "name": host.get("name"),
        "up": host.get("state") == "up",
        "collector": host.get("state"),
        "last_error": host.get("last_error"),
        "run": run.get("id"), "run_state": run.get("state"),
        "verdict": verdict,
        "alerts": [f"{a.get('rule')} {a.get('state')}" for a in (status or {}).get("alerts") or []][:MAX_ITEMS],
    }


def diagnosis_view(found: dict[str, Any]) -> dict[str, Any]:
    """Verdict, its sentence, the evidence (fact and numbers) and what to change."""
    return {
        "verdict": found.get("verdict"),
        "sentence": found.get("sentence"),
        "run": found.get("run"),
        "window_s": (found.get("window") or {}).get("seconds"),
        "evidence": [{"metric": e.get("metric"), "fact": e.get("fact"), "numbers": _rounded(e.get("numbers"))}
                     for e in (found.get("evidence") or [])[:MAX_ITEMS]],
        "suggestions": [{"action": s.get("action"), "flags": s.get("flags")}
                        for s in (found.get("suggestions") or [])[:MAX_ITEMS]],
        "other_findings": [f.get("verdict") for f in found.get("findings") or []
                           if f.get("verdict") != found.get("verdict")],
    }


def _rounded(numbers: Any) -> Any:
    return {k: _round(v) for k, v in numbers.items()} if isinstance(numbers, dict) else numbers


def prediction_view(predicted: dict[str, Any]) -> dict[str, Any]:
    """Predicted KV tokens, concurrency, throughput and queue, with units, the risks and the basis."""
    numbers = {
        "max_total_num_tokens": (predicted.get("max_total_num_tokens"), "tokens", "KV tokens the pool holds"),
        RUNNING_REQ: (predicted.get(RUNNING_REQ), "requests", "concurrent decode requests"),
        GEN_THROUGHPUT: (predicted.get(GEN_THROUGHPUT), "tokens/s", "generation throughput"),
        QUEUE_REQ: (predicted.get(QUEUE_REQ), "requests", "queued requests"),
    }
    basis = predicted.get("basis") or {}
    return {
        "run": predicted.get("run"),
        "changes": basis.get("changes"),
        "predicted": {k: {"value": _round(v), "unit": u, "label": label} for k, (v, u, label) in numbers.items()},
        "risks": [r.get("message") for r in (predicted.get("risks") or [])[:MAX_ITEMS]],
        "basis": {k: v for k, v in basis.items() if k != "changes" and isinstance(v, str)},
    }


def comparison_view(result: dict[str, Any]) -> dict[str, Any]:
    """Runs on their steady state: each row's medians and change, the flags that differ, the price."""
    runs = result.get("runs") or []
    return {
        "baseline": result.get("baseline"),
        "runs": [{"id": r.get("id"), "state": r.get("state"),
                  "steady": (r.get("steady") or {}).get("status"),
                  "steady_note": (r.get("steady") or {}).get("message")} for r in runs],
        "flag_diff": result.get("flag_diff"),
        "rows": [{"metric": row.get("metric"), "unit": row.get("unit"),
                  "values": [_round(v) for v in row.get("values") or []],
                  "change_pct": [None if c is None else round(c, 1) for c in row.get("change_pct") or []]}
                 for row in result.get("rows") or []],
        "price": [s.get("sentence") for s in result.get("summaries") or []],
    }


def last_run_ids(runs: Sequence[dict[str, Any]], count: int) -> list[str]:
    return [str(r["id"]) for r in runs[-count:]]


def series_window(metric: str, points: Sequence[Sequence[float]]) -> dict[str, Any]:
    """A series' recent points with the metric's unit: what the series resource answers."""
    entry = info(metric)
    return {"metric": metric, "unit": entry.unit, "label": entry.label,
            "points": [[p[0], _round(p[1])] for p in points]}


def fit(answer: dict[str, Any], limit: int = ANSWER_LIMIT) -> dict[str, Any]:
    """The answer, its longest lists cut from the end until its JSON (as the SDK indents it) fits
    `limit`; `truncated` names what was cut. The views above keep answers well under it; this is the
    bound for a log-derived sentence or flag set that is unusually long."""
    cut: list[str] = []
    while _size(answer) > limit:
        name, longest = max(((k, v) for k, v in answer.items() if isinstance(v, list) and v),
                            key=lambda kv: len(json.dumps(kv[1], default=str)), default=(None, None))
        if name is None or longest is None:
            return {"truncated": "the answer did not fit; ask for less", "keys": sorted(answer)[:20]}
        answer = {**answer, name: longest[:-1]}
        if name not in cut:
            cut.append(name)
    return {**answer, "truncated": cut} if cut else answer


def _size(answer: Any) -> int:
    return len(json.dumps(answer, indent=2, default=str).encode())


def campaign_view(campaign: dict[str, Any]) -> dict[str, Any]:
    """A campaign in a few lines: its state, the step under way, the table (predicted vs measured, skipped
    and why) and the price sentences; the plan's full flag sets are left out."""
    steps = campaign.get("steps") or []
    current = campaign.get("current")
    under_way = steps[current] if isinstance(current, int) and 0 <= current < len(steps) else None
    return fit({
        "id": campaign.get("id"),
        "host": campaign.get("host"),
        "state": campaign.get("state"),
        "reason": campaign.get("reason") or None,
        "step_under_way": None if under_way is None else {
            "candidate": (under_way.get("candidate") or {}).get("name"), "phase": under_way.get("phase"),
            "run_id": under_way.get("run_id")},
        "table": campaign.get("table") or [],
        "prices": campaign.get("prices") or [],
    })
