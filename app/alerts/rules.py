"""Alert rules: the defaults, and the `[alerts]` tables of kvwatch.toml that tune or disable them.

Every default rule can be changed for all hosts in a top-level `[alerts.<rule>]` table and for one
host in `[hosts.alerts.<rule>]`; the host's table wins key by key. Durations are seconds or strings
such as "90s", "2m", "1h30m". A bad key or value is one ConfigError line naming the field.

Two clocks: rules over log lines (`clock="event"`) measure `for`, `keep_firing_for` and windows in
log time, so a replayed or sped-up log behaves exactly as the live one; rules about data NOT
arriving (stale logs, unreachable host) can only be measured on this machine's clock (`"wall"`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal
from urllib.parse import urlsplit

from kvwatch.app.config import Config, HostConfig
from kvwatch.app.errors import ConfigError

Clock = Literal["event", "wall"]
SEVERITIES = ("page", "warn", "info")
SERVER_EVENTS = ("retract", "exception", "oom", "watchdog_timeout", "crash", "error")
DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


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


# fmt: off
DEFAULT_RULES: tuple[RuleSpec, ...] = (
    RuleSpec(
        "token_usage_high", "threshold", "event", "KV token usage high", "page",
        for_s=120, keep_firing_for_s=300,
        params={"metric": "token_usage", "fire_at": 0.95, "stay_at": 0.90, "debounce": 30.0},
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
)
# fmt: on
RULE_NAMES = tuple(rule.name for rule in DEFAULT_RULES)
COMMON_KEYS = ("enabled", "severity", "for", "keep_firing_for")
RATIOS = frozenset({"fire_at", "stay_at", "usage_at"})
PERCENTS = frozenset({"drop_pct", "clear_pct"})
COUNTS = frozenset({"min_count", "min_samples"})
DURATIONS = frozenset({"debounce", "window", "warmup", "after", "for", "keep_firing_for"})


def parse_duration(value: Any, field_name: str) -> float:
    """Seconds from a number or a Prometheus-style string ("90s", "2m", "1h30m")."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    if isinstance(value, str) and value and DURATION_RE.sub("", value) == "":
        return sum(float(n) * UNIT_S[unit] for n, unit in DURATION_RE.findall(value))
    raise ConfigError(f'{field_name}: expected a duration (seconds, or like "90s", "2m"), got {value!r}')


def rules_for_host(config: Config, host: HostConfig) -> tuple[RuleSpec, ...]:
    """The default rules with the config's global and then the host's own `[alerts]` overrides."""
    where = config.path
    global_table = _alerts_table(config.tables.get("alerts", {}), f"{where}: alerts")
    host_label = f"{where}: hosts[{host.name!r}].alerts"
    host_table = _alerts_table(host.tables.get("alerts", {}), host_label)
    all_off = not host_table.get("enabled", global_table.get("enabled", True))
    rules = []
    for rule in DEFAULT_RULES:
        rule = _override(rule, global_table.get(rule.name, {}), f"{where}: alerts.{rule.name}")
        rule = _override(rule, host_table.get(rule.name, {}), f"{host_label}.{rule.name}")
        rules.append(replace(rule, enabled=False) if all_off else rule)
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
        _alerts_table(config.tables.get("alerts", {}), f"{config.path}: alerts")


def _alerts_table(table: Any, label: str) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise ConfigError(f"{label}: expected a table")
    for key, value in table.items():
        if key == "enabled":
            if not isinstance(value, bool):
                raise ConfigError(f"{label}.enabled: expected true or false, got {value!r}")
        elif key not in RULE_NAMES:
            raise ConfigError(f"{label}.{key}: unknown alert rule (known: enabled, {', '.join(RULE_NAMES)})")
        elif not isinstance(value, dict):
            raise ConfigError(f"{label}.{key}: expected a table of rule settings")
    return table


def _override(rule: RuleSpec, table: dict[str, Any], label: str) -> RuleSpec:
    allowed = (*COMMON_KEYS, *(k for k in rule.params if k != "metric"))
    params = dict(rule.params)
    changes: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{label}.{key}"
        if key not in allowed:
            raise ConfigError(f"{name}: unknown setting (allowed: {', '.join(allowed)})")
        if key == "enabled":
            changes["enabled"] = _bool(value, name)
        elif key == "severity":
            if value not in SEVERITIES:
                raise ConfigError(f"{name}: expected one of {', '.join(SEVERITIES)}, got {value!r}")
            changes["severity"] = value
        elif key in ("for", "keep_firing_for"):
            changes[f"{key}_s"] = parse_duration(value, name)
        else:
            params[key] = _param(key, value, name)
    _check_consistent(params, label)
    return replace(rule, params=params, **changes)


def _param(key: str, value: Any, name: str) -> Any:
    if key in DURATIONS:
        return parse_duration(value, name)
    if key == "events":
        if not isinstance(value, list) or not value or not all(v in SERVER_EVENTS for v in value):
            raise ConfigError(f"{name}: expected a non-empty list of {', '.join(SERVER_EVENTS)}, got {value!r}")
        return tuple(value)
    number = _number(value, name)
    if key in RATIOS and not 0 <= number <= 1:
        raise ConfigError(f"{name}: expected a ratio between 0 and 1, got {value!r}")
    if key in PERCENTS and not 0 < number < 100:
        raise ConfigError(f"{name}: expected a percentage between 0 and 100, got {value!r}")
    if key in COUNTS:
        if not isinstance(value, int) or number < 1:
            raise ConfigError(f"{name}: expected a whole number >= 1, got {value!r}")
        return int(value)
    if number < 0:
        raise ConfigError(f"{name}: must not be negative, got {value!r}")
    return number


def _check_consistent(params: dict[str, Any], label: str) -> None:
    if "stay_at" in params and params["stay_at"] > params["fire_at"]:
        raise ConfigError(f"{label}.stay_at: must not be above fire_at ({params['stay_at']} > {params['fire_at']})")
    if "clear_pct" in params and params["clear_pct"] > params["drop_pct"]:
        raise ConfigError(
            f"{label}.clear_pct: must not be above drop_pct ({params['clear_pct']} > {params['drop_pct']})"
        )


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{name}: expected a number, got {type(value).__name__} {value!r}")
    return float(value)


def _bool(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{name}: expected true or false, got {value!r}")
    return value
