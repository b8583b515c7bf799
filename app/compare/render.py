"""The comparison as Markdown (the shape of the table in the-run-it-serves.md: one row per config,
one column per metric) and as CSV (tidy: one row per metric and run)."""

from __future__ import annotations

import csv
import io
import math
import re
from typing import Any

from kvwatch.app.metrics_catalog.names import COMPLETION_RATE, GEN_THROUGHPUT, QUEUE_REQ, RUNNING_REQ, TOKEN_USAGE

NOT_ENOUGH = "not enough steady data yet"
MARKDOWN_METRICS = (
    "max_total_num_tokens",
    RUNNING_REQ,
    TOKEN_USAGE,
    QUEUE_REQ,
    GEN_THROUGHPUT,
    COMPLETION_RATE,
)
CSV_COLUMNS = (
    "metric",
    "label",
    "unit",
    "run",
    "config",
    "value",
    "p5",
    "p95",
    "ci_low",
    "ci_high",
    "change_pct",
    "within_noise",
    "status",
    "resolution_s",
    "rollup_share",
    "source",  # completion_rate: where the run's count came from (output files, client progress, admissions)
)
ROLLUP_MARK = " [10 s rollup]"


_MARKDOWN_ACTIVE = re.compile(r"([\\`*\[\]<>|~!&#])")


def number(value: float, unit: str) -> str:
    if unit == "tokens" and abs(value) >= 10_000:
        return f"{value / 1000:.0f}K"
    if unit == "ratio":
        return f"{value:.2f}"
    if unit == "1/s":
        return f"{value:.3g}"
    if unit == "requests" and not float(value).is_integer():
        return f"{value:.1f}"
    return f"{value:.0f}"


def cell(row: dict[str, Any], i: int, baseline: int) -> str:
    value = row["values"][i]
    if value is None:
        texts = row.get("status_text") or [None] * (i + 1)
        if texts[i]:  # says "(the run has ended)" instead of "yet" for a run that has
            return str(texts[i])
        status = row["status"][i]
        return NOT_ENOUGH if status in ("settling", "too_short") else "no data" if status == "no_data" else "n/a"
    text = number(value, row["unit"])
    if row["p5"][i] is not None and not math.isclose(row["p5"][i], row["p95"][i]):
        text += f" ({number(row['p5'][i], row['unit'])}-{number(row['p95'][i], row['unit'])})"
    change, base = row["change_pct"][i], row["values"][baseline]
    if i != baseline and change is not None:
        text += f" {change:+.0f}%"
    elif i != baseline and base == 0:
        text += f" (+{number(value, row['unit'])} vs 0)" if value > 0 else ""
    if row["within_noise"][i]:
        text += " ≈"
    if (row.get("resolution_s") or [None] * (i + 1))[i]:
        text += ROLLUP_MARK
    return text


def markdown_text(text: str) -> str:
    """Text shown as itself in Markdown: labels come from flag values in a server's log, which could
    carry `<img onerror=...>`, `[x](javascript:...)`, code spans or a `|` that splits a table row.
    CommonMark lets any ASCII punctuation be backslash-escaped; `-`, `.`, `_` and `=` stay readable."""
    return _MARKDOWN_ACTIVE.sub(r"\\\1", text)


def to_markdown(result: dict[str, Any]) -> str:
    rows = {row["metric"]: row for row in result["rows"]}
    shown = [rows[m] for m in MARKDOWN_METRICS if m in rows]
    baseline = next(i for i, r in enumerate(result["runs"]) if r["id"] == result["baseline"])
    lines = ["| config | " + " | ".join(r["label"] for r in shown) + " |", "|---|" + "---|" * len(shown)]
    for i, run in enumerate(result["runs"]):
        label = ("baseline: " if i == baseline else "") + markdown_text(run["label"])
        lines.append(f"| {label} | " + " | ".join(cell(r, i, baseline) for r in shown) + " |")
    lines += [
        "",
        "Cells: steady-state median (p5-p95), then change vs the baseline; ≈ = within noise "
        "(the 95% block-bootstrap interval of the difference contains 0).",
    ]
    if COMPLETION_RATE in rows and rows[COMPLETION_RATE].get("source_note"):
        lines.append(f"completions/s from: {rows[COMPLETION_RATE]['source_note']}.")
    if any(run.get("resolution_s") for run in result["runs"]):
        lines.append(f"{ROLLUP_MARK.strip()}: {result.get('resolution_rule', '')}")
    for run in result["runs"]:
        steady = run["steady"]
        where = (
            f"steady {steady['start_offset_s'] / 60:.1f}-{steady['end_offset_s'] / 60:.1f} min after start"
            f" ({'auto' if steady['auto'] else 'by hand'})"
        )
        note = steady["message"] if steady["status"] != "steady" else where
        lines.append(f"- {markdown_text(run['label'])} (`{run['id']}`): {note}")
    prices = result.get("summaries") or []
    if prices:  # the comparison ends with the price of each choice, one sentence each
        lines += ["", *(f"Price: {markdown_text(entry['sentence'])}." for entry in prices)]
    return "\n".join(lines) + "\n"


def to_csv(result: dict[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in result["rows"]:
        for i, run in enumerate(result["runs"]):
            ci = row["ci"][i] or [None, None]
            writer.writerow(
                [
                    row["metric"],
                    row["label"],
                    row["unit"],
                    run["id"],
                    run["label"],
                    row["values"][i],
                    row["p5"][i],
                    row["p95"][i],
                    ci[0],
                    ci[1],
                    row["change_pct"][i],
                    row["within_noise"][i],
                    row["status"][i],
                    row["resolution_s"][i],
                    row["rollup_share"][i],
                    (row.get("source") or [None] * (i + 1))[i],
                ]
            )
    return out.getvalue()
