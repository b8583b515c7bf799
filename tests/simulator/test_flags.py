"""The command line behaves like SGLang's argparse parser."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kvwatch.simulator import flags
from tests.simulator.helpers import REPO


def test_unknown_flag_exits_2_with_sglangs_usage() -> None:
    argv = [sys.executable, "-m", "kvwatch.simulator.server", "--model-path", "/m", "--no-such-flag", "1"]
    done = subprocess.run(argv,
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("usage: launch_server.py")
    assert "launch_server.py: error: unrecognized arguments: --no-such-flag 1" in done.stderr


def test_missing_model_path_is_an_error() -> None:
    with pytest.raises(SystemExit) as exc:
        flags.parse_args(["--tp-size", "8"])
    assert exc.value.code == 2


def test_tp_and_dp_work_as_prefix_abbreviations() -> None:
    args = flags.parse_args(["--model-path", "/m", "--tp", "8", "--dp", "2"])
    assert (args.tp_size, args.dp_size) == (8, 2)
    assert flags.parse_args(["--model-path", "/m", "--tensor-parallel-size", "4"]).tp_size == 4


def test_types_are_checked() -> None:
    with pytest.raises(SystemExit):
        flags.parse_args(["--model-path", "/m", "--mem-fraction-static", "lots"])


@pytest.mark.parametrize(("version", "dtype", "accepted"), [
    ("0.5.23", "fp8_e4m3", True),
    ("0.5.23", "fp4_e2m1", False),  # gone in 0.5.23
    ("0.5.8", "fp4_e2m1", True),
    ("0.4.10", "bf16", False),
])
def test_kv_cache_dtype_choices_follow_the_version(version: str, dtype: str, accepted: bool) -> None:
    argv = ["--model-path", "/m", "--kv-cache-dtype", dtype, "--sim-version", version]
    if accepted:
        assert flags.parse_args(argv).kv_cache_dtype == dtype
    else:
        with pytest.raises(SystemExit):
            flags.parse_args(argv)


def test_hicache_alias_only_in_0_5_23() -> None:
    assert flags.parse_args(["--model-path", "/m", "--enable-hicache"]).enable_hierarchical_cache
    with pytest.raises(SystemExit):
        flags.parse_args(["--model-path", "/m", "--enable-hicache", "--sim-version", "0.5.8"])


@pytest.mark.parametrize("schema", [
    [{"name": "page-size", "type": "int", "default": 1},
     {"option_strings": ["--attention-backend"], "type": "str", "choices": ["fa3", "flashinfer"]},
     {"name": "--enable-mixed-chunk", "action": "store_true"}],
    {"flags": {"page-size": {"type": "int", "default": 1}, "attention-backend": {"choices": ["fa3", "flashinfer"]},
               "enable-mixed-chunk": {"type": "bool"}}},
])
def test_schema_flags_are_accepted_with_their_types_and_choices(schema: object) -> None:
    parser = flags.build_parser("0.5.23", schema)
    args = parser.parse_args(["--model-path", "/m", "--page-size", "16", "--attention-backend", "fa3",
                              "--enable-mixed-chunk"])
    assert (args.page_size, args.attention_backend, args.enable_mixed_chunk) == (16, "fa3", True)
    with pytest.raises(SystemExit):
        parser.parse_args(["--model-path", "/m", "--attention-backend", "nope"])
    with pytest.raises(SystemExit):
        parser.parse_args(["--model-path", "/m", "--page-size", "x"])


CONTROLLER_SHAPED = {"sglang": "0.5.23", "options": [  # the shape of app/flags/sglang-<version>.json
    {"action": "store", "choices": None, "default": 1, "dest": "page_size", "nargs": None,
     "option_strings": ["--page-size"], "type": "int"},
    {"action": "boolean_optional", "choices": None, "default": None, "dest": "enable_tf32_matmul", "nargs": 0,
     "option_strings": ["--enable-tf32-matmul", "--no-enable-tf32-matmul"], "type": None},
    {"action": "other:DeprecatedStoreTrueAction", "choices": None, "default": False, "dest": "old_switch",
     "nargs": 0, "option_strings": ["--old-switch"], "type": None},
    {"action": "store", "choices": None, "default": None, "dest": "json_model_override_args", "nargs": None,
     "option_strings": ["--json-model-override-args"], "type": "loads"},
    {"action": "store", "choices": None, "default": 1, "dest": "tp_size", "nargs": None,
     "option_strings": ["--tp-size", "--tensor-parallel-size"], "type": "int"},
]}


def test_controller_schema_shape() -> None:
    parser = flags.build_parser("0.5.23", CONTROLLER_SHAPED)
    args = parser.parse_args(["--model-path", "/m", "--tp", "8", "--page-size", "16", "--no-enable-tf32-matmul",
                              "--old-switch", "--json-model-override-args", '{"a": 1}'])
    assert (args.tp_size, args.page_size, args.enable_tf32_matmul, args.old_switch) == (8, 16, False, True)
    assert args.json_model_override_args == '{"a": 1}'
