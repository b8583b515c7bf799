"""`kvwatch wait --until ...`: the condition as data, and whether a /status answer meets it (pure).

steady            the current run has a steady window and compare would fill its row (GET /api/runs/{id}/steady,
                  by the host's one steady minimum, as compare finds it)
ready             the current run logged its ready event
alert             some alert of the host is firing; alert=RULE: that rule is firing
completions>=N    the host's output files hold at least N completions
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from kvwatch.app.metrics_catalog.names import COMPLETIONS, Completions

# completions>=N waits on the catalog's series of that name: /status reports it under that name too.
Kind = Literal["steady", "ready", "alert"] | Completions
AT_LEAST = re.compile(rf"{COMPLETIONS}\s*>=\s*(\d+)")
BARE: dict[str, Kind] = {"steady": "steady", "ready": "ready", "alert": "alert"}
USAGE = "steady, ready, alert, alert=RULE or completions>=N"


@dataclass(frozen=True, slots=True)
class Condition:
    kind: Kind
    rule: str | None = None  # alert=RULE
    count: int | None = None  # completions>=N

    def __str__(self) -> str:
        if self.kind == "alert" and self.rule:
            return f"alert={self.rule}"
        if self.kind == COMPLETIONS:
            return f"completions>={self.count}"
        return self.kind


def parse_condition(text: str) -> Condition:
    """Raise ValueError (argparse turns it into a usage error, exit 2) for anything else."""
    word = text.strip()
    if word in BARE:
        return Condition(BARE[word])
    if word.startswith("alert="):
        rule = word.removeprefix("alert=").strip()
        if not rule:
            raise ValueError(f"{text!r}: alert= needs a rule name")
        return Condition("alert", rule=rule)
    matched = AT_LEAST.fullmatch(word)
    if matched:
        return Condition(COMPLETIONS, count=int(matched.group(1)))
    raise ValueError(f"{text!r}: expected {USAGE}")


def current_run_id(status: dict[str, Any]) -> str | None:
    run = status.get("run")
    return str(run["id"]) if run and run.get("id") else None


def met(condition: Condition, status: dict[str, Any], steady: dict[str, Any] | None = None) -> bool:
    """Whether `status` (and, for steady, the current run's /steady answer) meets the condition."""
    if condition.kind == "steady":
        if steady is None or steady.get("run") != current_run_id(status):
            return False
        # `filled`: every row of compare has this run's number (a kvwatch older than it: the window alone)
        return steady.get("status") == "steady" and bool(steady.get("filled", True))
    if condition.kind == "ready":
        run = status.get("run") or {}
        return run.get("ready_at") is not None and run.get("state") == "running"
    if condition.kind == "alert":
        return any(
            a.get("state") == "firing" and (condition.rule is None or a.get("rule") == condition.rule)
            for a in status.get("alerts") or []
        )
    done = status.get(COMPLETIONS)
    return done is not None and condition.count is not None and done >= condition.count


def progress_note(condition: Condition, status: dict[str, Any], steady: dict[str, Any] | None) -> str:
    """Where things stand, for the timeout message: what was last seen of the awaited thing."""
    if condition.kind == "steady":
        if steady is None:
            return "no run yet"
        empty = steady.get("empty_rows") if steady.get("status") == "steady" else None
        note = f"no value yet for {', '.join(empty)}" if empty else steady.get("message") or ""
        return f"run {steady.get('run')}: {steady.get('status')} {note}".rstrip()
    if condition.kind == "ready":
        run = status.get("run")
        return "no run yet" if not run else f"run {run.get('id')} is {run.get('state')}"
    if condition.kind == "alert":
        states = [f"{a.get('rule')} {a.get('state')}" for a in status.get("alerts") or []]
        return "alerts: " + (", ".join(states) or "none")
    done = status.get(COMPLETIONS)
    return f"completions: {int(done) if isinstance(done, float) and done.is_integer() else done}"
