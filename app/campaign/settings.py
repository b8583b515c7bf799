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

A request (`POST /api/hosts/{name}/campaign`) may instead list its candidates one by one:
`{"candidates": [{"preset": "hicache-0.88"}, {"flags": {"mem-fraction-static": 0.9}}], "objective":
"gen_throughput", "step_budget_s": 1800}` (a candidate may give both: its flags over the preset), with the
table's other keys, and its budgets in seconds as `step_budget_s` / `total_budget_s`.
"""

from __future__ import annotations

import itertools
from typing import Any

from kvwatch.app.campaign.model import Candidate, Plan
from kvwatch.app.config.campaign import MAX_CANDIDATES, CampaignTable
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
    return _plan(table, found, min_steady_s)


def _plan(table: CampaignTable, found: tuple[Candidate, ...], min_steady_s: float) -> Plan:
    return Plan(candidates=found, objective=table.objective, max_queue=table.max_queue,
                max_usage=table.max_usage, min_steady_s=min_steady_s, step_budget_s=table.step_budget,
                total_budget_s=table.total_budget, min_free_gib=table.min_free_gib, on_failure=table.on_failure)


SECONDS_KEYS = {"step_budget_s": "step_budget", "total_budget_s": "total_budget"}
CANDIDATE_KEYS = frozenset({"name", "preset", "flags"})
CANDIDATE_SHAPE = '{"preset": NAME} and/or {"flags": {...}}'


def plan_from_request(data: dict[str, Any] | CampaignTable, label: str, min_steady_s: float) -> Plan:
    """A request body's plan: a table's keys, or `candidates` listed one by one (see the module's text);
    or the host's validated table."""
    if isinstance(data, CampaignTable):
        return plan_from_table(data, label, min_steady_s)
    both = [seconds for seconds, duration in SECONDS_KEYS.items() if seconds in data and duration in data]
    if both:
        raise ConfigError(f"{label}: give `{both[0]}` or `{SECONDS_KEYS[both[0]]}`, not both")
    table = {SECONDS_KEYS.get(key, key): value for key, value in data.items() if key != "candidates"}
    if "candidates" not in data:
        return plan_from_table(table, label, min_steady_s)
    checked = validated(CampaignTable, table, label)
    if checked.count():
        raise ConfigError(f"{label}: give `candidates`, or `presets`, `lever` or `grid`, not both")
    found = listed_candidates(data["candidates"], f"{label}.candidates")
    return _plan(checked, found, min_steady_s)


def listed_candidates(items: object, label: str) -> tuple[Candidate, ...]:
    if not isinstance(items, list) or not items:
        raise ConfigError(f"{label}: expected a list of candidates, each {CANDIDATE_SHAPE}")
    if len(items) > MAX_CANDIDATES:
        raise ConfigError(f"{label}: more than {MAX_CANDIDATES} candidates")
    return tuple(_candidate(item, f"{label}[{index}]") for index, item in enumerate(items))


def _candidate(item: object, label: str) -> Candidate:
    if not isinstance(item, dict) or not item or set(item) - CANDIDATE_KEYS:
        raise ConfigError(f"{label}: expected {CANDIDATE_SHAPE} (and an optional \"name\")")
    preset, flags, name = item.get("preset"), item.get("flags") or {}, item.get("name")
    if preset is not None and (not isinstance(preset, str) or not preset):
        raise ConfigError(f"{label}.preset: expected a preset's name")
    if not isinstance(flags, dict) or not all(isinstance(k, str) and k.strip("-") for k in flags):
        raise ConfigError(f"{label}.flags: expected a table of flag names and values")
    if preset is None and not flags:
        raise ConfigError(f"{label}: give a `preset`, `flags`, or both")
    if name is not None and (not isinstance(name, str) or not name):
        raise ConfigError(f"{label}.name: expected text")
    flags = {key.removeprefix("--"): value for key, value in flags.items()}
    told = ", ".join(f"{key} {value}" for key, value in flags.items())
    return Candidate(name or " + ".join(part for part in (preset, told) if part), preset=preset, flags=flags)
