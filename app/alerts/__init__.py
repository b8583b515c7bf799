"""Alerting: rules over the stored series (rules, signals, watches), their state machine (state),
the engine that keeps states in the store (engine), the webhook (delivery) and the evaluator thread
the app starts (service: `start_alerting(services)` -> AlertService, `.stop()`)."""

from __future__ import annotations

from kvwatch.app.alerts.engine import AlertEngine, Change
from kvwatch.app.alerts.rules import DEFAULT_RULES, RuleSpec, rules_for_host, validate_alert_config
from kvwatch.app.alerts.service import AlertService, alerts_view, start_alerting
from kvwatch.app.alerts.state import OPEN_STATES

__all__ = [
    "DEFAULT_RULES",
    "OPEN_STATES",
    "AlertEngine",
    "AlertService",
    "Change",
    "RuleSpec",
    "alerts_view",
    "rules_for_host",
    "start_alerting",
    "validate_alert_config",
]
