"""The status block of one host, as text: pure functions of the /status answer (no I/O, no clock).

demo  as of 2026-12-03 15:40:12 UTC  collector up
  run      demo-20261203T153012  running for 7m12s
  config   --mem-fraction-static 0.88 --enable-hierarchical-cache --hicache-size 48
  server   930.6 tok/s (5-min mean 912.4)  KV 0.96  running 72  queue 79  (3 s ago)
  client   1604/3500 (46%) 12 s ago
  outputs  B2_opencodeinstruct 1604  B6 200  | 1804 of 88000  1.23/s  ETA 19h41m
  alerts   FIRING token_usage 0.97 for 4m10s
  verdict  kv_bound
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from kvwatch.app.metrics_catalog.charts import TOKEN_USAGE_HIGH
from kvwatch.app.metrics_catalog.names import (
    COMPLETION_RATE,
    COMPLETIONS,
    GEN_THROUGHPUT,
    QUEUE_REQ,
    RUNNING_REQ,
    TOKEN_USAGE,
)

RED, YELLOW, BOLD, RESET = "\x1b[31m", "\x1b[33m", "\x1b[1m", "\x1b[0m"


def paint(text: str, style: str, colour: bool) -> str:
    return f"{style}{text}{RESET}" if colour else text


def duration(seconds: float | None) -> str:
    """12 s, 7m12s, 3h05m, 2d04h: short enough for one line, exact enough to compare."""
    if seconds is None:
        return "?"
    whole = max(round(seconds), 0)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h{minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours:02d}h"


def number(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}"


def clock(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def flag_words(flags: dict[str, Any]) -> str:
    """`--mem-fraction-static 0.88 --enable-hierarchical-cache ...`, as they would be typed."""
    words = []
    for name, value in flags.items():
        if value is False or value is None:
            continue
        words.append(f"--{name}" if value is True else f"--{name} {value}")
    return " ".join(words) or "(defaults)"


def run_lines(status: dict[str, Any]) -> list[str]:
    run = status.get("run")
    if not run:
        return ["  run      none detected yet"]
    since = run.get("started_at")
    age = "" if since is None else f" for {duration(status['as_of'] - since)}"
    # The server picks the flags that differ from SGLang's defaults; all of them from an older kvwatch.
    flags = flag_words(run.get("defining_flags", run.get("flags")) or {})
    return [f"  run      {run['id']}  {run.get('state', '?')}{age}", f"  config   {flags}"]


FULL_MEAN_S = 300.0  # the server's longest mean window; a younger run's mean covers the run alone


def mean_label(status: dict[str, Any]) -> str:
    """`5-min mean`, or `mean over 14 s` while the run is younger (never a mean over two runs)."""
    window = status.get("mean_window_s")
    if window is None or window >= FULL_MEAN_S:  # a full window, or a kvwatch older than the field
        return "5-min mean"
    return f"mean over {duration(window)}"


def server_line(status: dict[str, Any], colour: bool) -> str:
    usage = status.get(TOKEN_USAGE)
    usage_text = paint(number(usage, 2), RED, colour and usage is not None and usage >= TOKEN_USAGE_HIGH)
    times = [t for k, t in (status.get("sampled_at") or {}).items() if k in (GEN_THROUGHPUT, TOKEN_USAGE)]
    started = (status.get("run") or {}).get("started_at")
    # A run still starting has logged no batch yet: the newest numbers are the previous run's.
    earlier = ", before this run started" if times and started is not None and max(times) < started else ""
    age = f"  ({duration(status['as_of'] - max(times))} ago{earlier})" if times else "  (no samples yet)"
    mean = status.get("gen_throughput_mean", status.get("gen_throughput_mean_5min"))
    return (
        f"  server   {number(status.get(GEN_THROUGHPUT), 1)} tok/s"
        f" ({mean_label(status)} {number(mean, 1)})"
        f"  KV {usage_text}  running {number(status.get(RUNNING_REQ))}  queue {number(status.get(QUEUE_REQ))}{age}"
    )


def client_line(status: dict[str, Any], colour: bool) -> str | None:
    client = status.get("client")
    if not client:
        return None
    done, total = client.get("done"), client.get("total")
    if done is None:
        progress = "no progress line yet"
    else:
        share = f" ({100 * done / total:.0f}%)" if total else ""
        progress = f"{number(done)}/{number(total)}{share} {duration(client.get('age_s'))} ago"
    flag = paint("  SILENT while outputs grow (stdout buffered?)", RED, colour) if client.get("silent") else ""
    return f"  client   {progress}{flag}"


def outputs_line(status: dict[str, Any]) -> str | None:
    done = status.get(COMPLETIONS)
    if done is None:
        return None
    by_dataset = status.get("completions_by_dataset") or {}
    datasets = "  ".join(f"{name} {number(count)}" for name, count in by_dataset.items())
    target = status.get("target_completions")
    total = f"{number(done)} of {target}" if target else f"{number(done)} total"
    rate = status.get(COMPLETION_RATE)
    eta = status.get("eta_s")
    eta_text = "" if eta is None else ("  done" if eta == 0 else f"  ETA {duration(eta)}")
    parts = [p for p in (datasets, f"{total}  {number(rate, 2)}/s{eta_text}") if p]
    return "  outputs  " + "  | ".join(parts)


def clearing_words(alert: dict[str, Any]) -> str:
    """" — resolves in 4m40s" for a clearing alert (its condition is false; it waits out
    keep_firing_for), counted on the rule's clock from its last evaluation."""
    left = alert.get("resolves_in_s")
    if alert.get("state") != "clearing" or not isinstance(left, int | float):
        return ""
    return f" — resolves in {duration(left)}"


def alert_lines(status: dict[str, Any], colour: bool) -> list[str]:
    alerts = status.get("alerts") or []
    if not alerts:
        return ["  alerts   none"]
    lines: list[str] = []
    for alert in alerts:
        firing = alert.get("state") == "firing"
        state = paint(str(alert.get("state", "?")).upper(), RED if firing else YELLOW, colour)
        value = alert.get("value")
        shown = "" if not isinstance(value, int | float) else f" {value:.4g}"
        since = alert.get("since")
        age = "" if since is None else f" for {duration(status['as_of'] - since)}"
        label = "  alerts   " if not lines else " " * 11
        lines.append(f"{label}{state} {alert.get('rule')}{shown}{age}{clearing_words(alert)}")
    return lines


def render_block(status: dict[str, Any], colour: bool = False) -> str:
    """One host's block, one line per view, ending in a newline."""
    collector = (status.get("collector") or {}).get("state")
    header = f"{paint(str(status['host']), BOLD, colour)}  as of {clock(status['as_of'])}"
    lines = [header + (f"  collector {collector}" if collector else "")]
    lines += run_lines(status)
    lines.append(server_line(status, colour))
    lines += [line for line in (client_line(status, colour), outputs_line(status)) if line is not None]
    lines += alert_lines(status, colour)
    if status.get("verdict"):
        lines.append(f"  verdict  {paint(str(status['verdict']), BOLD, colour)}")
    return "\n".join(lines) + "\n"


def render_all(statuses: Sequence[dict[str, Any]], colour: bool = False) -> str:
    return "\n".join(render_block(s, colour) for s in statuses)
