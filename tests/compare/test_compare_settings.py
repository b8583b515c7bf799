"""`[hosts.compare] min_steady`: the shortest automatic steady window, per host (default 5 min)."""

from __future__ import annotations

import tomllib

import pytest

from kvwatch.app.compare.settings import host_min_steady
from kvwatch.app.config import parse_config
from kvwatch.app.errors import ConfigError

TOML = """
[[hosts]]
name = "gpu1"
ssh = "local"
server_log = "/tmp/sglang.log"

[hosts.compare]
min_steady = "2m"

[[hosts]]
name = "gpu2"
ssh = "local"
server_log = "/tmp/other.log"
"""


def test_a_host_sets_its_minimum_and_others_keep_the_default() -> None:
    config = parse_config(tomllib.loads(TOML), "kvwatch.toml")
    assert host_min_steady(config, "gpu1") == 120.0
    assert host_min_steady(config, "gpu2") == 300.0


def test_a_bad_setting_names_itself_when_the_config_is_read() -> None:
    with pytest.raises(ConfigError, match=r"hosts\['gpu1'\]\.compare\.min_stady: unknown setting"):
        parse_config(tomllib.loads(TOML.replace('min_steady = "2m"', "min_stady = 90")), "kvwatch.toml")
    with pytest.raises(ConfigError, match="min_steady: expected a duration"):
        parse_config(tomllib.loads(TOML.replace('"2m"', '"soon"')), "kvwatch.toml")
