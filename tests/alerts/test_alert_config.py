"""`[alerts]` in kvwatch.toml: defaults, global and per-host overrides, one-line errors naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.alerts.rules import DEFAULT_RULES, parse_duration, rules_for_host, validate_alert_config
from kvwatch.app.config import load_config
from kvwatch.app.errors import ConfigError

BASE = """
[[hosts]]
name = "gpu1"
ssh = "root@10.0.0.1"
server_log = "/logs/sglang.log"
"""


def config_with(tmp_path: Path, text: str) -> Any:
    path = tmp_path / "kvwatch.toml"
    path.write_text(text)
    return load_config(path)


def rules(tmp_path: Path, text: str) -> dict[str, Any]:
    config = config_with(tmp_path, text)
    validate_alert_config(config)
    return {r.name: r for r in rules_for_host(config, config.hosts[0])}


def test_defaults_without_any_alerts_table(tmp_path: Path) -> None:
    found = rules(tmp_path, BASE)
    assert tuple(found) == tuple(r.name for r in DEFAULT_RULES)
    usage = found["token_usage_high"]
    assert (usage.for_s, usage.keep_firing_for_s, usage.severity, usage.clock) == (120, 300, "page", "event")
    assert (usage.param("fire_at"), usage.param("stay_at")) == (0.95, 0.90)
    assert all(r.enabled for r in found.values())


def test_global_then_host_overrides_key_by_key(tmp_path: Path) -> None:
    text = (
        '[alerts.token_usage_high]\nfire_at = 0.97\nfor = "5m"\n'
        "[alerts.retractions]\nenabled = false\n" + BASE + "[hosts.alerts.token_usage_high]\nstay_at = 0.93\n"
        '[hosts.alerts.throughput_drop]\ndrop_pct = 30\nclear_pct = 10\nwindow = "2m"\n'
    )
    found = rules(tmp_path, text)
    usage = found["token_usage_high"]
    assert (usage.param("fire_at"), usage.param("stay_at"), usage.for_s) == (0.97, 0.93, 300)
    assert found["retractions"].enabled is False
    drop = found["throughput_drop"]
    assert (drop.param("drop_pct"), drop.param("clear_pct"), drop.param("window")) == (30, 10, 120)


def test_all_alerts_off_for_one_host(tmp_path: Path) -> None:
    found = rules(tmp_path, BASE + "[hosts.alerts]\nenabled = false\n")
    assert not any(r.enabled for r in found.values())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[alerts.token_usage]\n", r"kvwatch.toml:1: alerts.token_usage: unknown alert rule"),
        ("[alerts.token_usage_high]\nfire_at = 1.5\n", r"alerts.token_usage_high.fire_at: expected a ratio"),
        (
            "[alerts.token_usage_high]\nfire_at = 'high'\n",
            r"alerts.token_usage_high.fire_at: expected a number",
        ),
        (
            "[alerts.token_usage_high]\nfor = '2 minutes'\n",
            r"alerts.token_usage_high.for: expected a duration",
        ),
        (
            "[alerts.token_usage_high]\nstay_at = 0.99\n",
            r"alerts.token_usage_high.stay_at: must not be above",
        ),
        ("[alerts.token_usage_high]\nthreshold = 0.9\n", r"token_usage_high.threshold: unknown setting"),
        ("[alerts.token_usage_high]\nmetric = 'x'\n", r"token_usage_high.metric: unknown setting"),
        (
            "[alerts.server_errors]\nevents = ['segfault']\n",
            r"server_errors.events: expected a non-empty list",
        ),
        ("[alerts.retractions]\nmin_count = 0\n", r"retractions.min_count: expected a whole number"),
        ("[alerts.throughput_drop]\ndrop_pct = 150\n", r"throughput_drop.drop_pct: expected a percentage"),
        ("[alerts.host_unreachable]\nseverity = 'loud'\n", r"host_unreachable.severity: expected one of"),
        ("[alerts.host_unreachable]\nenabled = 'no'\n", r"host_unreachable.enabled: expected true or false"),
        ("[alerts]\nenabled = 1\n", r"alerts.enabled: expected true or false"),
        ("alerts = 3\n", r"alerts: expected a table"),
    ],
)
def test_bad_global_fields_are_one_line_errors_naming_the_field(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        rules(tmp_path, text + BASE)
    assert "\n" not in str(caught.value)


def test_bad_host_field_names_the_host(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"kvwatch.toml:7: hosts\['gpu1'\].alerts.queue_growing.window: expected"):
        rules(tmp_path, BASE + "[hosts.alerts.queue_growing]\nwindow = -5\n")


def test_reading_without_hosts_still_checks_the_table(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"kvwatch.toml:1: alerts\.nope: unknown alert rule"):
        config_with(tmp_path, "[alerts.nope]\n")


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(90, 90.0), (0.5, 0.5), ("90s", 90.0), ("2m", 120.0), ("1h30m", 5400.0), ("250ms", 0.25)],
)
def test_durations(value: object, seconds: float) -> None:
    assert parse_duration(value, "x") == seconds


@pytest.mark.parametrize("value", ["", "2", "m", "2 m", -1, True, "1x"])
def test_bad_durations(value: object) -> None:
    with pytest.raises(ConfigError, match="x: expected a duration"):
        parse_duration(value, "x")


@pytest.mark.parametrize("url", ["file:///etc/passwd", "hooks.slack.com/x", "ftp://h/x", "http://"])
def test_a_webhook_must_be_an_http_url(tmp_path: Path, url: str) -> None:
    with pytest.raises(ConfigError, match=r"kvwatch.toml: server.webhook: expected an http:// or https:// URL"):
        rules(tmp_path, f'[server]\nwebhook = "{url}"\n' + BASE)


def test_an_http_webhook_is_fine(tmp_path: Path) -> None:
    assert rules(tmp_path, '[server]\nwebhook = "https://hooks.example/T0/B0/x"\n' + BASE)
