"""The flag schema: facts of sglang 0.5.23's parser, argparse-style resolution, typed checks, launch parsing."""

from __future__ import annotations

import pytest

from kvwatch.app.flags.argv import merge, parse_launch, render
from kvwatch.app.flags.schema import load_bundled, normalize, validate

SCHEMA = load_bundled("0.5.23")


def test_the_bundled_schema_holds_every_option_of_the_parser() -> None:
    assert len(SCHEMA.options) == 531  # 532 argparse actions minus --help
    kv = SCHEMA.option("kv-cache-dtype")
    assert kv.default == "auto"
    assert kv.choices == ("auto", "fp8_e5m2", "fp8_e4m3", "mxfp8", "bf16", "bfloat16", "nvfp4", "fp4_mx_block16")
    assert SCHEMA.option("mem-fraction-static").default is None
    assert SCHEMA.option("decode-log-interval").default == 40
    assert SCHEMA.option("hicache-size").default == 0
    assert SCHEMA.option("enable-metrics").action == "store_true"
    assert SCHEMA.option("tp-size").option_strings == ("--tp-size", "--tensor-parallel-size")


@pytest.mark.parametrize(("given", "value", "canonical"), [
    ("tp", 8, "tp-size"), ("dp", 2, "dp-size"), ("tp-size", 8, "tp-size"), ("tensor-parallel-size", 8, "tp-size"),
    ("model", "/models/x", "model-path"), ("--mem-fraction-static", 0.88, "mem-fraction-static"),
    ("enable-hicache", True, "enable-hierarchical-cache"), ("mem-frac", 0.88, "mem-fraction-static"),
])
def test_names_resolve_like_argparse(given: str, value: object, canonical: str) -> None:
    flags, errors = normalize(SCHEMA, {given: value})
    assert errors == []
    assert flags == {canonical: value}


@pytest.mark.parametrize(("flags", "flag", "message"), [
    ({"no-such-flag": 1}, "no-such-flag", "unknown flag for sglang 0.5.23"),
    ({"enable": True}, "enable", "ambiguous abbreviation: could be --enable-adaptive-dispatch-to-encoder"),
    ({"kv-cache-dtype": "fp4_e2m1"}, "kv-cache-dtype", "'fp4_e2m1' is not one of auto, fp8_e5m2, fp8_e4m3"),
    ({"mem-fraction-static": "lots"}, "mem-fraction-static", "expected a number, got 'lots'"),
    ({"mem-fraction-static": float("nan")}, "mem-fraction-static", "expected a finite number"),
    ({"tp-size": True}, "tp-size", "expected int, got bool"),
    ({"tp-size": 8.5}, "tp-size", "expected an integer, got 8.5"),
    ({"tp-size": [8]}, "tp-size", "expected int, got list"),
    ({"enable-metrics": "yes"}, "enable-metrics", "a switch takes true or false, got 'yes'"),
    ({"max-total-tokens": "lots"}, "max-total-tokens", "expected an integer such as 16384 or 16k"),
    ({"api-key": "abc"}, "api-key", "secrets are never put on a command line"),
    ({"admin-api-key": "abc"}, "admin-api-key", "secrets are never put on a command line"),
    ({"ssl-keyfile-password": "abc"}, "ssl-keyfile-password", "secrets are never put on a command line"),
    ({"tp": 8, "tp-size": 4}, "tp-size", "given twice (also as --tp-size)"),
    ({"lora-paths": ["a", "-b"]}, "lora-paths", "a value may not start with '-'"),
    ({"": 1}, "", "not a flag name"),
])
def test_refusals_name_the_flag_and_the_reason(flags: dict[str, object], flag: str, message: str) -> None:
    errors = validate(SCHEMA, flags)
    assert len(errors) == 1
    assert errors[0].flag == flag
    assert errors[0].message.startswith(message)


def test_values_are_converted_like_argparse_would() -> None:
    flags, errors = normalize(SCHEMA, {"mem-fraction-static": "0.88", "hicache-size": "48", "max-total-tokens": "16k",
                                       "no-enable-tf32-matmul": True, "lora-paths": ["a", "b"],
                                       "enable-hierarchical-cache": True, "host": "0.0.0.0"})
    assert errors == []
    assert flags == {"mem-fraction-static": 0.88, "hicache-size": 48, "max-total-tokens": "16k",
                     "enable-tf32-matmul": False, "lora-paths": ["a", "b"], "enable-hierarchical-cache": True,
                     "host": "0.0.0.0"}
    assert render(SCHEMA, flags) == ["--mem-fraction-static=0.88", "--hicache-size=48", "--max-total-tokens=16k",
                                     "--no-enable-tf32-matmul", "--lora-paths", "a", "b",
                                     "--enable-hierarchical-cache", "--host=0.0.0.0"]


def test_launch_is_parsed_and_requests_lay_over_it() -> None:
    launch, errors = parse_launch(SCHEMA, "CUDA_VISIBLE_DEVICES=0,1 /opt/venv/bin/python -m sglang.launch_server "
                                          "--model-path /models/Kimi-K2.5 --tp 8 --trust-remote-code "
                                          "--mem-fraction-static=0.85 --kv-cache-dtype fp8_e4m3")
    assert errors == []
    assert launch.env == {"CUDA_VISIBLE_DEVICES": "0,1"}
    assert launch.program == ("/opt/venv/bin/python", "-m", "sglang.launch_server")
    assert launch.flags == {"model-path": "/models/Kimi-K2.5", "tp-size": 8, "trust-remote-code": True,
                            "mem-fraction-static": 0.85, "kv-cache-dtype": "fp8_e4m3"}
    changes, _ = normalize(SCHEMA, {"mem-fraction-static": 0.88, "kv-cache-dtype": None, "enable-hicache": True})
    assert launch.argv(SCHEMA, merge(launch.flags, changes)) == [
        "/opt/venv/bin/python", "-m", "sglang.launch_server", "--model-path=/models/Kimi-K2.5", "--tp-size=8",
        "--trust-remote-code", "--mem-fraction-static=0.88", "--enable-hierarchical-cache"]


@pytest.mark.parametrize(("command", "message"), [
    ("python -m sglang.launch_server --no-such 1", "unknown flag"),
    ("python -m sglang.launch_server --tp", "expects a value"),
    ("--tp 8", "no program before the first --flag"),
    ("python -m x 'unclosed", "cannot split the command line"),
    ("python -m sglang.launch_server --tp 8 stray", "unexpected argument 'stray'"),
])
def test_a_bad_launch_is_reported(command: str, message: str) -> None:
    _, errors = parse_launch(SCHEMA, command)
    assert any(message in e.message for e in errors), errors


def test_launch_values_are_trusted_for_characters_but_not_for_control_characters() -> None:
    _, errors = parse_launch(SCHEMA, "python -m sglang.launch_server --json-model-override-args '{\"a\": 1}'")
    assert errors == []
    _, errors = parse_launch(SCHEMA, "python -m sglang.launch_server --served-model-name 'a\nb'")
    assert [e.message for e in errors] == ["control characters (newline, NUL, ...) are not allowed in values"]
