"""Alert rules: the defaults, and the `[alerts]` tables of kvwatch.toml that tune or disable them.

Every default rule can be changed for all hosts in a top-level `[alerts.<rule>]` table and for one
host in `[hosts.alerts.<rule>]`; the host's table wins key by key. Durations are seconds or strings
such as "90s", "2m", "1h30m". Each table is a typed model (`AlertsTable`, and one `RuleSettings`
model a rule, made from its defaults); a bad key or value is one ConfigError line naming the file
and the field (app/config_tables.py).

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
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import BeforeValidator, Field, create_model
from pydantic_core import PydanticCustomError

from kvwatch.app.config import Config, HostConfig
from kvwatch.app.config_tables import (
    Count,
    Duration,
    Flag,
    NotNegative,
    Percent,
    Ratio,
    Table,
    duration_seconds,
    invalid,
    validated,
)
from kvwatch.app.errors import ConfigError
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
COMMON_KEYS = ("enabled", "severity", "for", "keep_firing_for")
RATIOS = frozenset({"fire_at", "stay_at", "usage_at"})
PERCENTS = frozenset({"drop_pct", "clear_pct"})
COUNTS = frozenset({"min_count", "min_samples"})
DURATIONS = frozenset({"debounce", "window", "warmup", "after", "for", "keep_firing_for"})


def _severity(value: Any) -> str:
    if value not in SEVERITIES:
        invalid(f"expected one of {', '.join(SEVERITIES)}, got {value!r}")
    return str(value)


def _events(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(v in SERVER_EVENTS for v in value):
        invalid(f"expected a non-empty list of {', '.join(SERVER_EVENTS)}, got {value!r}")
    return tuple(value)


def _rule_table(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        invalid("expected a table of rule settings")
    return value


Severity = Annotated[str, BeforeValidator(_severity)]
Events = Annotated[tuple[str, ...], BeforeValidator(_events)]
RuleTable = Annotated[dict[str, Any], BeforeValidator(_rule_table)]


def _param_type(key: str) -> Any:
    if key in DURATIONS:
        return Duration
    if key == "events":
        return Events
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
    fields.update({key: (_param_type(key), value) for key, value in rule.params.items() if key != "metric"})
    return create_model(f"AlertSettings_{rule.name}", __base__=RuleSettings, **fields)


class AlertSwitch(Table):
    """What `[alerts]` (every host) and `[hosts.alerts]` (one host) hold besides a table per rule."""

    unknown: ClassVar[str] = ".{key}: unknown alert rule (known: {allowed})"
    enabled: Flag = True


_RULE_TABLES: dict[str, Any] = {name: (RuleTable, Field(default_factory=dict)) for name in RULE_NAMES}
AlertsTable: type[AlertSwitch] = create_model("AlertsTable", __base__=AlertSwitch, **_RULE_TABLES)
SETTINGS: dict[str, type[RuleSettings]] = {rule.name: _settings_model(rule) for rule in DEFAULT_RULES}


def parse_duration(value: Any, field_name: str) -> float:
    """Seconds from a number or a Prometheus-style string ("90s", "2m", "1h30m")."""
    try:
        return duration_seconds(value)
    except PydanticCustomError as exc:
        raise ConfigError(f"{field_name}: {exc.message()}") from None


def rules_for_host(config: Config, host: HostConfig) -> tuple[RuleSpec, ...]:
    """The default rules with the config's global and then the host's own `[alerts]` overrides."""
    where = config.path
    global_table = validated(AlertsTable, config.tables.get("alerts", {}), f"{where}: alerts")
    host_label = f"{where}: hosts[{host.name!r}].alerts"
    host_table = validated(AlertsTable, host.tables.get("alerts", {}), host_label)
    enabled = host_table if "enabled" in host_table.model_fields_set else global_table
    rules = []
    for rule in DEFAULT_RULES:
        rule = _override(rule, getattr(global_table, rule.name), f"{where}: alerts.{rule.name}")
        rule = _override(rule, getattr(host_table, rule.name), f"{host_label}.{rule.name}")
        rules.append(rule if enabled.enabled else replace(rule, enabled=False))
    return tuple(rules)


def validate_alert_config(config: Config) -> None:
    """Raise ConfigError for the first bad `[alerts]` field anywhere in the config, or a webhook
    that is not an http(s) URL (urllib would open file:// too)."""
    webhook = config.server.webhook
    if webhook is not None and (urlsplit(webhook).scheme not in ("http", "https") or not urlsplit(webhook).hostname):
        # The URL itself is a secret (a Slack webhook's path is its key): name only its scheme.
        head = webhook.split("://", 1)[0]
        scheme = f"{head}://" if "://" in webhook and head.isalpha() and len(head) <= 10 else "no scheme"
        raise ConfigError(f"{config.path}: server.webhook: expected an http:// or https:// URL, got {scheme}")
    for host in config.hosts:
        rules_for_host(config, host)
    if not config.hosts:
        validated(AlertsTable, config.tables.get("alerts", {}), f"{config.path}: alerts")


def _override(rule: RuleSpec, table: dict[str, Any], label: str) -> RuleSpec:
    """`rule` with the settings `table` gives (a rule's `[alerts.<rule>]` table) laid over it."""
    given = validated(SETTINGS[rule.name], table, label).given()
    changes: dict[str, Any] = {key: given.pop(key) for key in ("enabled", "severity") if key in given}
    changes.update({f"{key.rstrip('_')}_s": given.pop(key) for key in ("for_", "keep_firing_for") if key in given})
    params = {**rule.params, **given}
    _check_consistent(params, label)
    return replace(rule, params=params, **changes)


def _check_consistent(params: dict[str, Any], label: str) -> None:
    """Across settings, and across the global and the host's table: a rule's thresholds in order."""
    if "stay_at" in params and params["stay_at"] > params["fire_at"]:
        raise ConfigError(f"{label}.stay_at: must not be above fire_at ({params['stay_at']} > {params['fire_at']})")
    if "clear_pct" in params and params["clear_pct"] > params["drop_pct"]:
        raise ConfigError(
            f"{label}.clear_pct: must not be above drop_pct ({params['clear_pct']} > {params['drop_pct']})"
        )
