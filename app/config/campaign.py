"""`[hosts.campaign]`: a tuning campaign's plan, as declared (or a request's body: the same keys).
app/campaign/settings.py turns it into the candidates and the Plan."""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, Field, model_validator

from kvwatch.app.config.tables import Duration, NotNegative, Ratio, Table, invalid
from kvwatch.app.metrics_catalog.names import GEN_THROUGHPUT, Objective

OnFailure = Literal["continue", "stop"]  # after a step that crashes or never becomes ready
MAX_CANDIDATES = 16  # a grid larger than this is hours of restarts: declare it in parts


def _names(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v for v in value):
        invalid("expected a list of preset names")
    return tuple(value)


class CampaignTable(Table):
    unknown: ClassVar[str] = ".{key}: unknown setting (allowed: {allowed})"
    presets: Annotated[tuple[str, ...], BeforeValidator(_names)] = ()
    lever: str | None = None
    values: tuple[Any, ...] = ()
    grid: dict[str, tuple[Any, ...]] = Field(default_factory=dict)
    objective: Objective = GEN_THROUGHPUT
    max_queue: NotNegative | None = None
    max_usage: Ratio | None = None
    step_budget: Duration = 1800.0
    total_budget: Duration = 14400.0
    min_free_gib: NotNegative = 8.0
    on_failure: OnFailure = "continue"

    @model_validator(mode="after")
    def _one_kind(self) -> CampaignTable:
        kinds = [bool(self.presets), self.lever is not None, bool(self.grid)]
        if sum(kinds) > 1:
            invalid("give one of `presets`, `lever` with `values`, or `grid`")
        if self.lever is not None and not self.values:
            invalid("`lever` needs `values`")
        if self.count() > MAX_CANDIDATES:
            invalid(f"more than {MAX_CANDIDATES} candidates")
        return self

    def count(self) -> int:
        """How many candidates the plan has (the grid's combinations, without making them)."""
        if self.presets:
            return len(self.presets)
        if self.lever is not None:
            return len(self.values)
        return math.prod(len(values) for values in self.grid.values()) if self.grid else 0
