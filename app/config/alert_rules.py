"""The default alert rules: what each watches, its clock, scope and default settings. kvwatch.toml's
`[alerts.<rule>]` tables (app/config/alerts.py) tune them; app/alerts evaluates them.

Two clocks: rules over log lines (`clock="event"`) measure `for`, `keep_firing_for` and windows in
log time, so a replayed or sped-up log behaves exactly as the live one; rules about data NOT
arriving (stale logs, unreachable host) can only be measured on this machine's clock (`"wall"`).

Two scopes, declared per kind in KIND_SCOPES: a rule about the server's state (`"run"`: usage,
queue, server events, throughput) judges one server run; when a new run starts on the host its open
alert resolves (reason `run_ended`) and the new run starts from zero. A rule about a source or the
host (`"source"`: stale logs, stalled outputs, SSH) spans runs: a restart does not fix a dead link.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from kvwatch.app.metrics_catalog.charts import TOKEN_USAGE_HIGH
from kvwatch.app.metrics_catalog.names import TOKEN_USAGE

Clock = Literal["event", "wall"]
Scope = Literal["run", "source"]
# Every kind an evaluator exists for (app.alerts.signals and app.alerts.watches), and its scope.
KIND_SCOPES: Mapping[str, Scope] = {
    "threshold": "run", "queue": "run", "events": "run", "throughput": "run",
    "server_stale": "source", "client_stale": "source", "outputs_stalled": "source",
    "host_key": "source", "unreachable": "source", "series_cap": "source",
}
SEVERITIES = ("page", "warn", "info")
SERVER_EVENTS = ("retract", "exception", "oom", "watchdog_timeout", "crash", "error")


@dataclass(frozen=True, slots=True)
class RuleSpec:
    name: str
    kind: str  # which evaluator in app.alerts.signals / app.alerts.watches
    clock: Clock
    title: str  # what a person reads first: "KV token usage high"
    severity: str = "warn"
    for_s: float = 0.0
    keep_firing_for_s: float = 0.0
    enabled: bool = True
    params: Mapping[str, Any] = field(default_factory=dict)

    def param(self, key: str) -> Any:
        return self.params[key]

    @property
    def run_scoped(self) -> bool:
        """Does a new server run on the host end this rule's alert? (see KIND_SCOPES)"""
        return KIND_SCOPES[self.kind] == "run"


# fmt: off
DEFAULT_RULES: tuple[RuleSpec, ...] = (
    RuleSpec(
        "token_usage_high", "threshold", "event", "KV token usage high", "page",
        for_s=120, keep_firing_for_s=300,
        params={"metric": TOKEN_USAGE, "fire_at": TOKEN_USAGE_HIGH, "stay_at": 0.90, "debounce": 30.0},
    ),
    RuleSpec(
        "queue_growing", "queue", "event", "queue growing while KV cache is full", "warn",
        for_s=120, keep_firing_for_s=120, params={"usage_at": 0.90, "window": 60.0, "min_increase": 1.0},
    ),
    RuleSpec(
        "retractions", "events", "event", "requests retracted (KV cache pool full)", "warn",
        keep_firing_for_s=300,
        params={"events": ("retract",), "window": 300.0, "min_count": 1},
    ),
    RuleSpec(
        "server_errors", "events", "event", "server error", "page", keep_firing_for_s=600,
        params={"events": ("exception", "oom", "watchdog_timeout", "crash"), "window": 300.0, "min_count": 1},
    ),
    RuleSpec(
        "throughput_drop", "throughput", "event", "generation throughput dropped", "warn",
        for_s=120, keep_firing_for_s=120,
        params={"drop_pct": 50.0, "clear_pct": 25.0, "window": 60.0, "warmup": 300.0, "min_samples": 20},
    ),
    RuleSpec("server_log_stale", "server_stale", "wall", "server log stale", "warn", params={"after": 120.0}),
    RuleSpec(
        "client_log_stale", "client_stale", "wall", "client log stale while outputs grow", "info",
        keep_firing_for_s=300, params={"after": 300.0},
    ),
    RuleSpec("outputs_stalled", "outputs_stalled", "wall", "outputs stalled", "warn", params={"after": 600.}),
    RuleSpec("host_key_changed", "host_key", "wall", "SSH host key rejected", "page"),
    RuleSpec("host_unreachable", "unreachable", "wall", "host unreachable", "page", for_s=120),
    RuleSpec("series_cap_reached", "series_cap", "wall", "series cap reached: new series dropped", "warn"),
)
# fmt: on
RULE_NAMES = tuple(rule.name for rule in DEFAULT_RULES)
