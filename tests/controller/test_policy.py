"""kvwatch.toml's controller keys: launch, presets, vetoes, restart settings."""

from __future__ import annotations

import tomllib

import pytest

from kvwatch.app.controller.policy import EXAMPLE_PRESETS, EXAMPLE_VETO, parse_controller_config
from kvwatch.app.errors import ConfigError
from kvwatch.app.flags.argv import merge, parse_launch
from kvwatch.app.flags.schema import load_bundled, normalize

SCHEMA = load_bundled("0.5.23")
EXAMPLE = """
[presets.quiet-logs]
flags = { decode-log-interval = 200 }

[[vetoes]]
flag = "enable-torch-compile"
value = "true"
reason = "compiles for 20 minutes on every start"

[[hosts]]
name = "gpu1"
ssh = "root@10.1.230.174:22"
server_log = "/data/eagle3/synth_100k/logs/sglang_inference.log"
launch = "/opt/sglang/bin/python -m sglang.launch_server --model-path /models/Kimi-K2.5 --tp 8 --trust-remote-code"

[hosts.presets.default-085]
description = "116K KV tokens, 35-50 concurrent decode reqs, 600-850 tok/s"
flags = { mem-fraction-static = 0.85 }

[hosts.presets.bf16-hicache-088]
flags = { mem-fraction-static = 0.88, enable-hierarchical-cache = true, hicache-size = 48 }

[hosts.presets.fp8-hicache-090]
flags = { mem-fraction-static = 0.90, kv-cache-dtype = "fp8_e4m3", enable-hierarchical-cache = true, hicache-size = 48 }

[[hosts.vetoes]]
flag = "kv-cache-dtype"
value = "fp8*"
reason = "the owner ruled out fp8 KV cache: it degrades the model noticeably"

[hosts.restart]
stop_timeout = 90
max_restarts = 5
"""


def parsed():
    data = tomllib.loads(EXAMPLE)
    config = parse_controller_config(data["hosts"][0], {"presets": data["presets"], "vetoes": data["vetoes"]})
    assert config is not None
    return config


def test_the_documented_example_parses() -> None:
    config = parsed()
    assert set(config.presets) == {"quiet-logs", "default-085", "bf16-hicache-088", "fp8-hicache-090"}
    assert config.presets["default-085"].description.startswith("116K")
    assert [v.flag for v in config.vetoes] == ["enable-torch-compile", "kv-cache-dtype"]
    assert config.python == "/opt/sglang/bin/python"  # the launch's own interpreter
    assert config.state_dir == "~/.kvwatch/gpu1"
    assert config.log_dir == "/data/eagle3/synth_100k/logs"
    assert config.restart.python is None  # the table as written: the default is the host's
    assert config.restart.stop_timeout == 90
    assert config.restart.max_restarts == 5
    assert config.restart.ready_timeout == 1800


def _target(config, preset: str):
    launch, errors = parse_launch(SCHEMA, config.launch)
    changes, more = normalize(SCHEMA, config.presets[preset].flags)
    assert errors == more == []
    return merge(launch.flags, changes)


def test_the_fp8_preset_is_vetoed_and_the_others_are_not() -> None:
    config = parsed()
    assert config.veto_for(SCHEMA, _target(config, "fp8-hicache-090")) is config.vetoes[1]
    assert config.veto_for(SCHEMA, _target(config, "bf16-hicache-088")) is None
    assert config.veto_for(SCHEMA, _target(config, "default-085")) is None


@pytest.mark.parametrize(("value", "vetoed"),
                         [("fp8_e4m3", True), ("fp8_e5m2", True), ("bf16", False), ("auto", False)])
def test_the_example_veto_matches_every_fp8_kind(value: str, vetoed: bool) -> None:
    assert EXAMPLE_VETO.matches(SCHEMA, {"kv-cache-dtype": value}) is vetoed


def test_a_boolean_veto_matches_true() -> None:
    config = parsed()
    assert config.veto_for(SCHEMA, {"enable-torch-compile": True}) is config.vetoes[0]
    assert config.veto_for(SCHEMA, {"enable-torch-compile": False}) is None


def test_the_example_presets_are_valid_flags_of_0_5_23() -> None:
    for name, preset in EXAMPLE_PRESETS.items():
        assert normalize(SCHEMA, preset.flags)[1] == [], name


def test_no_launch_means_no_controller() -> None:
    assert parse_controller_config({"name": "gpu1"}) is None


@pytest.mark.parametrize(("table", "message"), [
    ({"presets": {"x": {"flags": {}}}}, "hosts.gpu1: presets and vetoes need a `launch` command"),
    ({"launch": 5}, "hosts.gpu1.launch: expected a command line string"),
    ({"launch": "p", "presets": {"x": {"mem-fraction-static": 0.9}}}, "hosts.gpu1.presets.x: expected a `flags` table"),
    ({"launch": "p", "presets": {"x": {"flags": {}, "flgs": 1}}}, "hosts.gpu1.presets.x: unknown key(s) flgs"),
    ({"launch": "p", "vetoes": [{"flag": "kv-cache-dtype"}]}, "hosts.gpu1.vetoes[0]: needs `flag` and `reason`"),
    ({"launch": "p", "vetoes": {"flag": "x"}}, "hosts.gpu1.vetoes: expected [[hosts.vetoes]] entries"),
    ({"launch": "p", "restart": {"stop_timeout": 0}}, "hosts.gpu1.restart.stop_timeout: expected a positive number"),
    ({"launch": "p", "restart": {"stop_timout": 5}}, "hosts.gpu1.restart: unknown key(s) stop_timout"),
])
def test_bad_tables_are_one_line_errors_naming_the_key(table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_controller_config({"name": "gpu1", **table})
    assert str(error.value).startswith(message)
