"""Every table of kvwatch.toml is a typed model (app/config/): a bad field is one ConfigError line
that names the file, the key's line, the table and the field, when the file is read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kvwatch.app.build import build_services
from kvwatch.app.config import load_config
from kvwatch.app.config.alerts import SETTINGS, AlertsTable
from kvwatch.app.config.compare import CompareTable
from kvwatch.app.config.controller import PresetTable, RestartTable, VetoTable
from kvwatch.app.config.messages import validated
from kvwatch.app.config.tables import Table
from kvwatch.app.controller.policy import parse_controller_config
from kvwatch.app.errors import ConfigError

HOST = """[[hosts]]
name = "gpu1"
ssh = "local"
server_log = "/tmp/kvwatch-tables/sglang.log"
launch = "python3 -m sglang.launch_server --model-path /m"
"""


@pytest.mark.parametrize(("text", "line"), [
    ('[hosts.presets.x]\nflags = {}\nflgs = 1\nzz = 2\n', "hosts['gpu1'].presets.x: unknown key(s) flgs, zz"),
    ('[hosts.presets.x]\nflags = 3\n', "hosts['gpu1'].presets.x: expected a `flags` table"),
    ('[[hosts.vetoes]]\nflag = "kv-cache-dtype"\n', "hosts['gpu1'].vetoes[0]: needs `flag` and `reason`"),
    ("[hosts.restart]\nstop_timeout = 0\n", "hosts['gpu1'].restart.stop_timeout: expected a positive number, got 0"),
    ("[hosts.restart]\nmax_restarts = 'many'\n", "hosts['gpu1'].restart.max_restarts: expected a positive number"),
    ("[hosts.restart]\nallow_flags = 'port'\n", "hosts['gpu1'].restart.allow_flags: expected a list of flag names"),
    ("[hosts.restart]\nstop_timout = 5\n", "hosts['gpu1'].restart: unknown key(s) stop_timout"),
    ("[hosts.alerts.token_usage_high]\nfire_at = 2\n",
     "hosts['gpu1'].alerts.token_usage_high.fire_at: expected a ratio between 0 and 1, got 2"),
    ("[hosts.alerts.token_usage_high]\nfor = 'soon'\n",
     "hosts['gpu1'].alerts.token_usage_high.for: expected a duration"),
    ("[hosts.alerts]\ntoken_usage = {}\n", "hosts['gpu1'].alerts.token_usage: unknown alert rule (known: enabled, "),
    ("[hosts.alerts]\nqueue_growing = 3\n", "hosts['gpu1'].alerts.queue_growing: expected a table of rule settings"),
])
def test_a_bad_host_table_stops_the_start_naming_file_and_field(tmp_path: Path, text: str, line: str) -> None:
    path = tmp_path / "kvwatch.toml"
    path.write_text(f"[server]\ndata_dir = '{tmp_path}'\n" + HOST + text)
    with pytest.raises(ConfigError) as caught:
        build_services(load_config(path))
    assert re.match(rf"{re.escape(str(path))}:\d+: {re.escape(line)}", str(caught.value)), str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(("text", "line"), [
    ("[presets.calm]\ndescription = 'x'\n", "presets.calm: expected a `flags` table"),
    ("[[vetoes]]\nreason = 'no'\n", "vetoes[0]: needs `flag` and `reason`"),
    ("[alerts.retractions]\nmin_count = 1.5\n", "alerts.retractions.min_count: expected a whole number >= 1"),
    ("[alerts.server_log_stale]\nafter = -1\n", "alerts.server_log_stale.after: expected a duration"),
])
def test_a_bad_shared_table_names_file_and_field(tmp_path: Path, text: str, line: str) -> None:
    path = tmp_path / "kvwatch.toml"
    path.write_text(f"[server]\ndata_dir = '{tmp_path}'\n" + text + HOST)
    with pytest.raises(ConfigError) as caught:
        build_services(load_config(path))
    assert re.match(rf"{re.escape(str(path))}:\d+: {re.escape(line)}", str(caught.value)), str(caught.value)


def test_a_bad_compare_table_names_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "kvwatch.toml"
    path.write_text(HOST + "[hosts.compare]\nmin_steady = []\n")
    with pytest.raises(ConfigError, match=rf"^{path}:7: hosts\['gpu1'\]\.compare\.min_steady: expected a duration"):
        load_config(path)


def test_good_tables_give_typed_values() -> None:
    config = parse_controller_config({
        "name": "gpu1", "launch": "python3 -m sglang.launch_server", "server_log": "/logs/s.log",
        "presets": {"calm": {"flags": {"mem-fraction-static": 0.8}, "description": 5}},
        "vetoes": [{"flag": "--kv-cache-dtype", "value": "fp8*", "reason": "quality", "note": "ignored"}],
        "restart": {"stop_timeout": 7, "max_restarts": 2.0, "allow_flags": ["--port"], "flags_schema": 0.5},
    })
    assert config is not None
    assert config.presets["calm"].description == "5" and config.vetoes[0].flag == "kv-cache-dtype"
    restart = config.restart
    assert (restart.stop_timeout, restart.max_restarts, restart.flags_schema) == (7.0, 2, "0.5")
    assert (restart.log_dir, restart.state_dir, restart.ready_timeout) == (None, None, 1800.0)  # as written
    assert (config.log_dir, config.state_dir) == ("/logs", "~/.kvwatch/gpu1")  # the host's defaults
    assert config.allow_flags == frozenset({"port"})
    rule = validated(SETTINGS["token_usage_high"], {"for": "2m", "fire_at": 0.9}, "x")
    assert rule.given() == {"for_": 120.0, "fire_at": 0.9}


@pytest.mark.parametrize("model", [PresetTable, RestartTable, CompareTable, AlertsTable, *SETTINGS.values()])
def test_every_table_refuses_unknown_keys(model: type[Table]) -> None:
    table = {"flags": {}} if model is PresetTable else {}
    with pytest.raises(ConfigError, match=r"^f\.t(\.nope)?: unknown"):
        validated(model, {**table, "nope": 1}, "f.t")


def test_a_veto_ignores_other_keys_as_it_always_did() -> None:
    veto = validated(VetoTable, {"flag": "x", "reason": "y", "resaon": "z"}, "f.v")
    assert (veto.flag, veto.value, veto.reason) == ("x", "*", "y")


@pytest.mark.parametrize(("text", "line"), [
    ("[server]\nport = 0\n", "server.port: 0 is not a TCP port"),
    ("[server]\ntoken = 12345\n", "server.token: expected str, got int (value not shown)"),
    ("[server]\ntrusted_proxies = ['*']\n", "server.trusted_proxies: '*' is not an IP address or network"),
    ("[server]\nprot = 1\nhots = 2\n", "server.hots: unknown key (allowed: allowed_hosts, data_dir, database, host, "),
    (HOST + "gpu = 1\n", "hosts['gpu1'].gpu: expected bool, got int 1"),
    (HOST + "timezone = 'Mars/Olympus'\n", "hosts['gpu1'].timezone: unknown zone 'Mars/Olympus'"),
    (HOST + "gpu_interval = 0\n", "hosts['gpu1'].gpu_interval: must be between 0.1 s and 3600 s, got 0"),
    (HOST + "gpu_interval = '2h'\n", "hosts['gpu1'].gpu_interval: must be between 0.1 s and 3600 s, got '2h'"),
    (HOST + "gpu_interval = 'often'\n", "hosts['gpu1'].gpu_interval: expected a duration"),
    ("[[hosts]]\nname = 'a'\nssh = 5\n", "hosts['a'].server_log: missing (required)"),
    ("[[hosts]]\nname = ''\nssh = 'local'\nserver_log = 'x'\n", "hosts[''].name: must not be empty"),
    ("hosts = [3]\n", "hosts[0]: expected a table"),
    ("[srever]\n", "srever: unknown key (allowed: alerts, hosts, presets, server, vetoes)"),
])
def test_server_and_host_tables_name_file_and_field(tmp_path: Path, text: str, line: str) -> None:
    path = tmp_path / "kvwatch.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert re.match(rf"{re.escape(str(path))}:\d+: {re.escape(line)}", str(caught.value)), str(caught.value)
