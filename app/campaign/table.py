"""The campaign's final table (every step, predicted vs measured, skipped and why) and its price
sentences, made by the compare code's price sentence (app/compare/price.py) with the chosen config as
the baseline: a measured step by its measurement, a skipped one by its prediction."""

from __future__ import annotations

from typing import Any

from kvwatch.app.campaign.model import Campaign, Step
from kvwatch.app.compare.price import CHANGES, sentence
from kvwatch.app.metrics_catalog.names import GEN_THROUGHPUT, QUEUE_REQ, RUNNING_REQ

COLUMNS = ("step", "candidate", "status", "KV tokens predicted", "KV tokens measured", "KV error",
           "running predicted", "running measured", "tok/s predicted", "tok/s measured", "queue measured", "why")


def _figures(step: Step) -> dict[str, Any]:
    """The step's numbers: measured where it ran, else predicted."""
    source = step.measured if step.status == "measured" and step.measured else step.prediction
    return dict(source or {})


def _fmt(value: object, digits: int = 0) -> str:
    return f"{value:,.{digits}f}" if isinstance(value, int | float) and not isinstance(value, bool) else "-"


def rows(campaign: Campaign) -> list[dict[str, str]]:
    out = []
    for index, step in enumerate(campaign.steps, start=1):
        p, m = step.prediction or {}, step.measured or {}
        chosen = " (chosen)" if campaign.best == index - 1 and campaign.state == "done" else ""
        values = (str(index), step.candidate.name, step.status + chosen,
                  _fmt(p.get("max_total_num_tokens")), _fmt(m.get("max_total_num_tokens")),
                  f"{step.kv_error * 100:+.1f} %" if step.kv_error is not None else "-",
                  _fmt(p.get(RUNNING_REQ)), _fmt(m.get(RUNNING_REQ)),
                  _fmt(p.get(GEN_THROUGHPUT)), _fmt(m.get(GEN_THROUGHPUT)), _fmt(m.get(QUEUE_REQ)),
                  step.reason or "-")
        out.append(dict(zip(COLUMNS, values, strict=True)))
    return out


def _change(value: object, base: object) -> float | None:
    if not isinstance(value, int | float) or not isinstance(base, int | float) or not base:
        return None
    return (float(value) - float(base)) / float(base) * 100


def prices(campaign: Campaign) -> list[str]:
    """One sentence per step with numbers, against the chosen step: what choosing it instead would buy."""
    if campaign.best is None:
        return []
    steps = [s for s in campaign.steps if _figures(s).get("max_total_num_tokens") is not None or s.status == "measured"]
    base = campaign.steps[campaign.best]
    if base not in steps:
        return []
    figures = [_figures(s) for s in steps]
    b = steps.index(base)
    names = sorted({n for s in steps for n in (s.flags or _asked(s, campaign))})
    result = {
        "runs": [{"id": s.candidate.name} for s in steps],
        "rows": [{"metric": metric, "values": [f.get(metric) for f in figures],
                  "change_pct": [_change(f.get(metric), figures[b].get(metric)) for f in figures]}
                 for metric in [m for m, _ in CHANGES] + [QUEUE_REQ]],
        "flag_diff": [{"flag": n, "values": [(s.flags or _asked(s, campaign)).get(n) for s in steps]} for n in names],
    }
    out = []
    for i, step in enumerate(steps):
        if i == b:
            continue
        text = sentence(result, i, b)
        if step.status == "skipped":
            text += f" (predicted; skipped: {step.reason})"
        elif step.status == "measured" and not step.within_limits:
            text += f" (over the plan's limits: {step.reason})"
        out.append(f"{step.candidate.name}: {text}")
    return out


def _asked(step: Step, campaign: Campaign) -> dict[str, Any]:
    """A refused candidate has no complete flags: the start config with the changes it was predicted for."""
    changes = ((step.prediction or {}).get("basis") or {}).get("changes") or {}
    merged = {**campaign.start_flags, **changes}
    return {k: v for k, v in merged.items() if v is not None}


def as_markdown(campaign: Campaign) -> str:
    table = rows(campaign)
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(r[c].replace("|", "/") for c in COLUMNS) + " |" for r in table]
    return "\n".join(lines)
