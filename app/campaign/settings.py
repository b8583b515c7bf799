"""A campaign's plan as kvwatch.toml's `[hosts.campaign]` declares it (or a request's body, same keys).

    [hosts.campaign]
    presets = ["hicache-0.88", "fp8-0.90", "hicache-0.93"]   # candidates: presets by name, in order,
    # lever = "mem-fraction-static"                          # or one flag with its values,
    # values = [0.86, 0.88, 0.90]
    # grid = { mem-fraction-static = [0.86, 0.88], max-running-requests = [64, 96] }   # or a small grid
    objective = "gen_throughput"      # or "completion_rate": the steady value a step is scored by
    max_queue = 100                   # limits: a step over them is measured but never chosen
    max_usage = 0.99
    step_budget = "30m"               # restart + steady window, per step
    total_budget = "4h"
    min_free_gib = 8                  # predicted GiB a candidate must leave after CUDA-graph capture
    on_failure = "continue"           # or "stop": after a step that crashes or never becomes ready

The steady window per step is the host's one steady minimum, `[hosts.compare] min_steady`. The table's
model is app/config/campaign.py's CampaignTable: the whole config is validated at load.
"""

from __future__ import annotations

import itertools

from kvwatch.app.campaign.model import Candidate, Plan
from kvwatch.app.config.campaign import CampaignTable
from kvwatch.app.config.messages import validated
from kvwatch.app.errors import ConfigError


def candidates(table: CampaignTable) -> tuple[Candidate, ...]:
    if table.presets:
        return tuple(Candidate(name, preset=name) for name in table.presets)
    if table.lever is not None:
        lever = table.lever.removeprefix("--")
        return tuple(Candidate(f"{lever} {v}", flags={lever: v}) for v in table.values)
    if not table.grid:
        return ()
    names = [n.removeprefix("--") for n in table.grid]
    combos = itertools.product(*table.grid.values())
    return tuple(Candidate(", ".join(f"{n} {v}" for n, v in zip(names, combo, strict=True)),
                           flags=dict(zip(names, combo, strict=True))) for combo in combos)


def plan_from_table(data: object, label: str, min_steady_s: float) -> Plan:
    """The plan `data` declares (the host's validated table, or a request's body); ConfigError naming
    `label` and the field when it is bad."""
    table = data if isinstance(data, CampaignTable) else validated(CampaignTable, data, label)
    found = candidates(table)
    if not found:
        raise ConfigError(f"{label}: no candidates (give `presets`, `lever` with `values`, or `grid`)")
    return Plan(candidates=found, objective=table.objective, max_queue=table.max_queue,
                max_usage=table.max_usage, min_steady_s=min_steady_s, step_budget_s=table.step_budget,
                total_budget_s=table.total_budget, min_free_gib=table.min_free_gib, on_failure=table.on_failure)
