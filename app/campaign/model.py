"""A campaign as data: its plan, its steps and where it is, kept in the store as one document."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from kvwatch.app.config.campaign import OnFailure
from kvwatch.app.metrics_catalog.names import Objective

CAMPAIGN_DOC = "campaign"  # one document a campaign, keyed by its id
State = Literal["planned", "running", "paused", "stopped", "done"]
StepStatus = Literal["planned", "skipped", "running", "measured", "failed"]
ACTIVE: frozenset[str] = frozenset({"planned", "running", "paused"})  # one such campaign a host at a time


@dataclass(frozen=True, slots=True)
class Candidate:
    """One flag set to try: a preset, flags, or both (flags over the preset), laid over the launch line."""

    name: str
    preset: str | None = None
    flags: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Plan:
    """What a campaign carries out, as stored with it: the candidates made from its table, the table's
    limits and budgets in seconds, and the host's steady minimum. No field has a default of its own:
    `[hosts.campaign]`'s model (CampaignTable) is where defaults live, and app/campaign/settings.py's
    plan_from_table is the one way a Plan is made from it (from_dict reads one back from the store)."""

    candidates: tuple[Candidate, ...]
    objective: Objective
    max_queue: float | None  # limits: a step above them is measured but never chosen
    max_usage: float | None
    min_steady_s: float  # the host's one steady minimum ([hosts.compare] min_steady)
    step_budget_s: float  # restart + steady window, per step
    total_budget_s: float
    min_free_gib: float  # memory a candidate must leave after CUDA-graph capture (predicted)
    on_failure: OnFailure

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        candidates = tuple(Candidate(**c) for c in data.get("candidates", ()))
        return cls(**{**{k: v for k, v in data.items() if k in cls.__dataclass_fields__}, "candidates": candidates})


@dataclass(slots=True)
class Step:
    """One candidate's part of the campaign: predicted before any restart, then run or skipped."""

    candidate: Candidate
    flags: dict[str, Any]  # the complete flags it means (launch + preset + flags); empty when refused
    prediction: dict[str, Any] | None = None
    status: StepStatus = "planned"
    reason: str = ""  # why skipped or failed, or what the measurement says
    phase: str = ""  # restarting, steady (while running)
    operation_id: str | None = None
    run_id: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    measured: dict[str, Any] | None = None
    kv_error: float | None = None  # (predicted - measured) / measured KV tokens
    score: float | None = None  # the objective, measured; None when it may not be chosen
    within_limits: bool = True

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Step:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**{**known, "candidate": Candidate(**data["candidate"])})


@dataclass(slots=True)
class Campaign:
    id: str
    host: str
    plan: Plan
    steps: list[Step]
    start_flags: dict[str, Any]  # what the host ran when the campaign was planned: the fallback
    created_at: float
    state: State = "planned"
    reason: str = ""  # why paused, stopped or done
    who: str = ""
    started_at: float | None = None
    ended_at: float | None = None
    current: int | None = None  # index of the running step
    best: int | None = None  # index of the best measured step so far
    final_flags: dict[str, Any] | None = None
    prices: list[str] = field(default_factory=list)
    moving_to: dict[str, Any] | None = None  # a rollback, or the final move, to the best config
    move_op: str | None = None
    finishing: str | None = None  # why the campaign ends once the host runs the best config
    events: list[tuple[float, str]] = field(default_factory=list)

    def note(self, at: float, text: str) -> None:
        self.events.append((at, text))

    def best_flags(self) -> dict[str, Any]:
        return self.steps[self.best].flags if self.best is not None else self.start_flags

    def as_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["plan"] = self.plan.as_dict()
        data["steps"] = [s.as_dict() for s in self.steps]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Campaign:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**{**known, "plan": Plan.from_dict(data["plan"]),
                      "steps": [Step.from_dict(s) for s in data["steps"]],
                      "events": [tuple(e) for e in data.get("events", [])]})
