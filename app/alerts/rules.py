"""Alert rules: the defaults, with the `[alerts]` tables of kvwatch.toml that tune or disable them.

Every default rule can be changed for all hosts in a top-level `[alerts.<rule>]` table and for one
host in `[hosts.alerts.<rule>]`; the host's table wins key by key. The rules themselves (kind, clock,
scope, defaults) are app/config/alert_rules.py's, and the tables' models app/config/alerts.py's: the
config is validated whole when it is read, so what is left here is laying the tables over the rules.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from pydantic_core import PydanticCustomError

from kvwatch.app.config import Config, HostConfig
from kvwatch.app.config.alert_rules import (
    DEFAULT_RULES,
    KIND_SCOPES,
    RULE_NAMES,
    SERVER_EVENTS,
    SEVERITIES,
    Clock,
    RuleSpec,
    Scope,
)
from kvwatch.app.config.alerts import SETTINGS, AlertsTable, AlertSwitch, misordered, rule_params
from kvwatch.app.config.tables import duration_seconds
from kvwatch.app.errors import ConfigError

__all__ = [  # the rules' catalogue and the tables' models, where the alerting code has always found them
    "DEFAULT_RULES", "KIND_SCOPES", "RULE_NAMES", "SERVER_EVENTS", "SETTINGS", "SEVERITIES", "AlertsTable",
    "Clock", "RuleSpec", "Scope", "parse_duration", "rules_for_host", "validate_alert_config",
]


def parse_duration(value: Any, field_name: str) -> float:
    """Seconds from a number or a Prometheus-style string ("90s", "2m", "1h30m")."""
    try:
        return duration_seconds(value)
    except PydanticCustomError as exc:
        raise ConfigError(f"{field_name}: {exc.message()}") from None


def rules_for_host(config: Config, host: HostConfig) -> tuple[RuleSpec, ...]:
    """The default rules with the config's global and then the host's own `[alerts]` overrides."""
    global_table, host_table = config.alerts, host.alerts
    enabled = host_table if "enabled" in host_table.model_fields_set else global_table
    label = f"{config.path}: hosts[{host.name!r}].alerts"
    rules = []
    for rule in DEFAULT_RULES:
        rule = _override(rule, global_table, host_table, label)
        rules.append(rule if enabled.enabled else replace(rule, enabled=False))
    return tuple(rules)


def validate_alert_config(config: Config) -> None:
    """Raise ConfigError for a webhook that is not an http(s) URL (urllib would open file:// too), or
    a rule whose thresholds are out of order once a host's table is laid over the global one."""
    webhook = config.server.webhook
    if webhook is not None and (urlsplit(webhook).scheme not in ("http", "https") or not urlsplit(webhook).hostname):
        # The URL itself is a secret (a Slack webhook's path is its key): name only its scheme.
        head = webhook.split("://", 1)[0]
        scheme = f"{head}://" if "://" in webhook and head.isalpha() and len(head) <= 10 else "no scheme"
        raise ConfigError(f"{config.path}: server.webhook: expected an http:// or https:// URL, got {scheme}")
    for host in config.hosts:
        rules_for_host(config, host)


def _override(rule: RuleSpec, global_table: AlertSwitch, host_table: AlertSwitch, label: str) -> RuleSpec:
    """`rule` with the settings of the global and then the host's `[alerts.<rule>]` laid over it."""
    changes: dict[str, Any] = {}
    for table in (global_table, host_table):
        given = getattr(table, rule.name).given()
        changes.update({key: given[key] for key in ("enabled", "severity") if key in given})
        changes.update({f"{key.rstrip('_')}_s": given[key] for key in ("for_", "keep_firing_for") if key in given})
    params = rule_params(rule, global_table, host_table)
    wrong = misordered(params)
    if wrong is not None:
        raise ConfigError(f"{label}.{rule.name}.{wrong[0]}: {wrong[1]}")
    return replace(rule, params=params, **changes)
