"""The simulated server's command line: SGLang's flags (as its argparse has them) plus `--sim-*`.

SGLang parses with a plain `argparse.ArgumentParser` (prefix abbreviations allowed, which is why
`--tp 8` works for `--tp-size`), exits 2 with a usage line on an unknown flag, and checks choices.
When the controller's flag schema for the simulated version exists (`app/flags/sglang-<version>.json`)
every flag in it is accepted with its type and choices; the flags below are always there, because
they are the ones the simulator acts on.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from kvwatch.simulator import logfmt

PROG = "launch_server.py"
SCHEMA_DIR = Path(__file__).resolve().parent.parent / "app" / "flags"

KV_DTYPE_CHOICES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("0.4.3", ("auto", "fp8_e5m2", "fp8_e4m3")),
    ("0.5.5", ("auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1")),
    ("0.5.23", ("auto", "fp8_e5m2", "fp8_e4m3", "mxfp8", "bf16", "bfloat16", "nvfp4", "fp4_mx_block16")),
)


def kv_dtype_choices(version: str) -> tuple[str, ...]:
    chosen: tuple[str, ...] = ("auto", "fp8_e5m2")
    for floor, choices in KV_DTYPE_CHOICES:
        if logfmt.at_least(version, floor):
            chosen = choices
    return chosen


def _sglang_flags(p: argparse.ArgumentParser, version: str) -> None:
    new = logfmt.at_least(version, "0.5.0")
    p.add_argument("--model-path", *(["--model"] if new else []), dest="model_path", type=str, required=True)
    p.add_argument("--tokenizer-path", type=str, default=None)
    p.add_argument("--host", type=str, default="127.0.0.1")
    p.add_argument("--port", type=int, default=30000)
    p.add_argument("--mem-fraction-static", type=float, default=None)
    p.add_argument("--max-running-requests", type=int, default=None)
    p.add_argument("--max-total-tokens", type=int, default=None)
    p.add_argument("--chunked-prefill-size", type=int, default=None)
    p.add_argument("--max-prefill-tokens", type=int, default=16384)
    p.add_argument("--schedule-conservativeness", type=float, default=1.0)
    p.add_argument("--tp-size", "--tensor-parallel-size", dest="tp_size", type=int, default=1)
    p.add_argument("--dp-size", "--data-parallel-size", dest="dp_size", type=int, default=1)
    p.add_argument("--kv-cache-dtype", type=str, default="auto", choices=kv_dtype_choices(version))
    p.add_argument("--context-length", type=int, default=None)
    p.add_argument("--served-model-name", type=str, default=None)
    p.add_argument("--trust-remote-code", action="store_true")
    p.add_argument("--disable-radix-cache", action="store_true")
    p.add_argument("--cuda-graph-max-bs", type=int, default=None)
    p.add_argument("--watchdog-timeout", type=float, default=300)
    p.add_argument("--log-level", type=str, default="info")
    p.add_argument("--log-level-http", type=str, default=None)
    p.add_argument("--enable-metrics", action="store_true")
    if not logfmt.at_least(version, "0.3.6"):
        return
    p.add_argument("--decode-log-interval", type=int, default=40)
    if logfmt.at_least(version, "0.4.3"):
        hicache = ["--enable-hicache"] if logfmt.at_least(version, "0.5.23") else []
        p.add_argument("--enable-hierarchical-cache", *hicache, dest="enable_hierarchical_cache",
                       action="store_true")
    if logfmt.at_least(version, "0.4.6"):
        p.add_argument("--hicache-ratio", type=float, default=None if new else 2.0)
        p.add_argument("--hicache-size", type=int, default=0)


def _sim_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("simulator (not SGLang)")
    g.add_argument("--sim-version", default=logfmt.DEFAULT_VERSION, choices=sorted(logfmt.VERSIONS))
    g.add_argument("--sim-speed", type=float, default=1.0, help="simulated seconds per wall second")
    g.add_argument("--sim-backfill", type=float, default=0.0,
                   help="start the event clock this many simulated seconds in the past")
    g.add_argument("--sim-warp", type=float, default=1.0, help="clock rate until the backfill is caught up")
    g.add_argument("--sim-stamps", choices=("sim", "wall"), default="sim",
                   help="stamp lines with simulated time (default) or the wall-clock instant they are written")
    g.add_argument("--sim-load-s", type=float, default=None,
                   help="simulated seconds of weight loading and CUDA graph capture (default 30 and 8)")
    g.add_argument("--sim-log-file", type=Path, default=None, help="append the log here instead of stdout")
    g.add_argument("--sim-pid-file", type=Path, default=None, help="write this process's pid here")
    g.add_argument("--sim-pid-dir", type=Path, default=None,
                   help="create a file named by this process's pid here (the demo stops every one listed)")
    g.add_argument("--sim-parent-pid", type=int, default=None,
                   help="shut down (as on SIGTERM) when this process is no longer the parent")
    g.add_argument("--sim-watch-pid", type=int, default=None,
                   help="shut down (as on SIGTERM) when this process has exited")
    g.add_argument("--sim-seed", type=int, default=0)
    g.add_argument("--sim-fail-after", type=float, default=None,
                   help="simulated seconds after ready at which the scheduler crashes")
    g.add_argument("--sim-fail-mode", default="exception", choices=("exception", "watchdog", "oom"))
    g.add_argument("--sim-drain-timeout", type=float, default=30.0,
                   help="simulated seconds a SIGTERM waits for in-flight requests")
    g.add_argument("--sim-response-mean", type=float, default=2300.0,
                   help="mean response tokens when the request does not say (X-Sim-Output-Tokens)")


def _arg_type(name: str) -> Any:
    return {"int": int, "float": float, "str": str, "string": str}.get(name, str)


def _schema_entries(schema: Any) -> Iterable[Mapping[str, Any]]:
    """A schema is a list of option dicts, a dict name -> option, or either under "flags"/"options"."""
    if isinstance(schema, Mapping):
        inner = schema.get("flags", schema.get("options", schema))
        if isinstance(inner, Mapping):
            return [{"name": name, **(spec if isinstance(spec, Mapping) else {})} for name, spec in inner.items()]
        schema = inner
    return [entry for entry in schema if isinstance(entry, Mapping)]


def _option_strings(entry: Mapping[str, Any]) -> list[str]:
    strings = entry.get("option_strings") or entry.get("flags") or [entry.get("name") or entry.get("flag")]
    return [s if str(s).startswith("-") else "--" + str(s) for s in strings if s]


def _add_schema_option(p: argparse.ArgumentParser, strings: list[str], entry: Mapping[str, Any]) -> None:
    """One option as its schema row describes it; only int/float types and choices are checked."""
    kind = str(entry.get("type") or "")
    action = str(entry.get("action") or "store")
    extra: dict[str, Any] = {"dest": entry["dest"]} if entry.get("dest") else {}
    if action == "boolean_optional":
        positive = [s for s in strings if not s.startswith("--no-")]
        p.add_argument(*positive, action=argparse.BooleanOptionalAction, default=entry.get("default"), **extra)
    elif action == "store_false":
        p.add_argument(*strings, action="store_false", **extra)
    elif action == "store_true" or kind in ("bool", "store_true") or entry.get("nargs") == 0:
        p.add_argument(*strings, action="store_true", **extra)
    else:
        p.add_argument(*strings, type=_arg_type(kind), default=entry.get("default"),
                       choices=entry.get("choices") or None, nargs=entry.get("nargs"), **extra)


def add_schema_flags(p: argparse.ArgumentParser, schema: Any) -> int:
    """Adds every schema option the parser does not have yet; returns how many were added."""
    known = set(p._option_string_actions)  # argparse has no public lookup of defined options
    added = 0
    for entry in _schema_entries(schema):
        strings = _option_strings(entry)
        if not strings or any(s in known for s in strings):
            continue
        _add_schema_option(p, strings, entry)
        known.update(strings)
        added += 1
    return added


def schema_path(version: str) -> Path:
    return SCHEMA_DIR / f"sglang-{version}.json"


def build_parser(version: str, schema: Any | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG)
    _sglang_flags(p, version)
    _sim_flags(p)
    if schema is None and schema_path(version).is_file():
        schema = json.loads(schema_path(version).read_text(encoding="utf-8"))
    if schema is not None:
        add_schema_flags(p, schema)
    return p


def sniff_version(argv: list[str]) -> str:
    """--sim-version decides which flags exist, so it is read before the real parse."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--sim-version", default=logfmt.DEFAULT_VERSION)
    known, _ = pre.parse_known_args(argv)
    version = str(known.sim_version)
    return version if version in logfmt.VERSIONS else logfmt.DEFAULT_VERSION


def parse_args(argv: list[str]) -> argparse.Namespace:
    return build_parser(sniff_version(argv)).parse_args(argv)
