"""`[alerts]` (every host) and `[hosts.alerts]` (one host): switch alerting off, or tune a default
rule in its `[alerts.<rule>]` table. Each rule's table is a model made from the rule's defaults
(app/config/alert_rules.py); the host's table wins key by key (app/alerts/rules.py lays them over
the defaults). Durations are seconds or strings such as "90s", "2m", "1h30m".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import BeforeValidator, Field, create_model

from kvwatch.app.config.alert_rules import DEFAULT_RULES, SERVER_EVENTS, SEVERITIES, RuleSpec
from kvwatch.app.config.tables import Count, Duration, Flag, NotNegative, Percent, Ratio, Table, invalid
from kvwatch.app.metrics_catalog.entries import info

COMMON_KEYS = ("enabled", "severity", "for", "keep_firing_for")
RATIOS = frozenset({"usage_at"})
THRESHOLDS = frozenset({"fire_at", "stay_at"})  # in the unit of the rule's metric: a ratio only for a ratio
PERCENTS = frozenset({"drop_pct", "clear_pct"})
COUNTS = frozenset({"min_count", "min_samples"})
DURATIONS = frozenset({"debounce", "window", "warmup", "after", "for", "keep_firing_for"})
ORDERED = (("stay_at", "fire_at"), ("clear_pct", "drop_pct"))  # (lower, upper): a rule's thresholds in order


def _severity(value: Any) -> str:
    if value not in SEVERITIES:
        invalid(f"expected one of {', '.join(SEVERITIES)}, got {value!r}")
    return str(value)


def _events(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not value or not all(v in SERVER_EVENTS for v in value):
        invalid(f"expected a non-empty list of {', '.join(SERVER_EVENTS)}, got {value!r}")
    return tuple(value)


def _rule_table(value: Any) -> Any:
    if not isinstance(value, dict | RuleSettings):
        invalid("expected a table of rule settings")
    return value


Severity = Annotated[str, BeforeValidator(_severity)]
Events = Annotated[tuple[str, ...], BeforeValidator(_events)]


def _param_type(key: str, rule: RuleSpec) -> Any:
    if key in DURATIONS:
        return Duration
    if key == "events":
        return Events
    if key in THRESHOLDS:
        return Ratio if info(str(rule.params.get("metric", ""))).unit == "ratio" else NotNegative
    return Ratio if key in RATIOS else Percent if key in PERCENTS else Count if key in COUNTS else NotNegative


class RuleSettings(Table):
    """A rule's `[alerts.<rule>]` table; each rule's model (SETTINGS) adds the rule's parameters."""

    unknown: ClassVar[str] = ".{key}: unknown setting (allowed: {allowed})"


def _settings_model(rule: RuleSpec) -> type[RuleSettings]:
    """The `[alerts.<rule>]` table of one rule: the common keys, and the rule's own parameters."""
    fields: dict[str, Any] = {
        "enabled": (Flag, rule.enabled), "severity": (Severity, rule.severity),
        "for_": (Duration, Field(rule.for_s, alias="for")), "keep_firing_for": (Duration, rule.keep_firing_for_s),
    }
    fields.update({key: (_param_type(key, rule), value) for key, value in rule.params.items() if key != "metric"})
    return create_model(f"AlertSettings_{rule.name}", __base__=RuleSettings, **fields)


class AlertSwitch(Table):
    """What `[alerts]` (every host) and `[hosts.alerts]` (one host) hold besides a table per rule."""

    unknown: ClassVar[str] = ".{key}: unknown alert rule (known: {allowed})"
    enabled: Flag = True


SETTINGS: dict[str, type[RuleSettings]] = {rule.name: _settings_model(rule) for rule in DEFAULT_RULES}
_RULE_TABLES: dict[str, Any] = {
    name: (Annotated[model, BeforeValidator(_rule_table)], Field(default_factory=model))
    for name, model in SETTINGS.items()
}
if TYPE_CHECKING:  # to a type checker the table is the switch: its rule fields are made at run time
    AlertsTable = AlertSwitch
else:
    AlertsTable = create_model("AlertsTable", __base__=AlertSwitch, **_RULE_TABLES)


def rule_params(rule: RuleSpec, *tables: AlertSwitch) -> dict[str, Any]:
    """The rule's parameters with the settings of `tables` (global, then host) laid over them."""
    params = dict(rule.params)
    for table in tables:
        given = getattr(table, rule.name).given()
        params.update({key: value for key, value in given.items() if key not in ("enabled", "severity", "for_",
                                                                                 "keep_firing_for")})
    return params


def misordered(params: dict[str, Any]) -> tuple[str, str] | None:
    """(key, why) when a rule's thresholds are out of order, across its tables; else None."""
    for lower, upper in ORDERED:
        if lower in params and params[lower] > params[upper]:
            return lower, f"must not be above {upper} ({params[lower]} > {params[upper]})"
    return None
