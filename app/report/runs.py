"""A report's run facts and comparison table, from the run tracker and compare (app.runs, app.compare)."""

from __future__ import annotations

import logging
from typing import Any

from kvwatch.app.compare import DEFAULT_MIN_STEADY_S, NothingStored, compare_runs
from kvwatch.app.errors import ConfigError
from kvwatch.app.runs import Run, list_runs
from kvwatch.app.store.base import Store

log = logging.getLogger(__name__)


def find_run(store: Store, host: str, run_id: str) -> Run:
    runs = list_runs(store, host)
    for run in runs:
        if run.id == run_id:
            return run
    known = ", ".join(r.id for r in runs) or "none yet"
    raise ConfigError(f"--run: no run {run_id!r} on host {host!r} (runs: {known})")


def run_facts(run: Run) -> dict[str, Any]:
    """What the report's "Run" table lists: identity, state, then the launch flags and capacity."""
    facts: dict[str, Any] = {"run": run.id, "state": run.state}
    facts.update({f"--{name}": value for name, value in run.flags.items()})
    facts.update(run.capacity)
    return facts


def host_comparison(
    store: Store, host: str, baseline: str | None, min_steady_s: float = DEFAULT_MIN_STEADY_S
) -> dict[str, Any] | None:
    """Every run of the host side by side, when it has two or more, each steady window at least
    `min_steady_s` long (the host's one minimum: app/compare/settings.py)."""
    runs = list_runs(store, host)
    if len(runs) < 2:
        return None
    try:
        _, result = compare_runs(store, runs, baseline=baseline, min_steady_s=min_steady_s)
    except NothingStored as exc:  # none of the runs has a sample left: the report shows the rest
        log.warning("report: comparison left out: %s", exc)
        return None
    return result
