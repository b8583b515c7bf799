"""Per-host controller configuration: launch command, presets, quality vetoes, restart settings.

In kvwatch.toml, inside a `[[hosts]]` entry (TOML attaches the sub-tables to the entry above them):

    [[hosts]]
    name = "gpu1"
    ssh = "root@10.1.230.174:22"
    server_log = "/data/eagle3/synth_100k/logs/sglang_inference.log"
    launch = "python -m sglang.launch_server --model-path /models/Kimi-K2.5 --tp 8 --trust-remote-code"

    [hosts.presets.default-085]           # a named flag set, laid over `launch`
    description = "116K KV tokens, 35-50 concurrent decode reqs, 600-850 tok/s"
    flags = { mem-fraction-static = 0.85 }

    [[hosts.vetoes]]                      # refused with 403 and the reason, whoever asks
    flag = "kv-cache-dtype"
    value = "fp8*"                        # fnmatch glob on the value as text; "*" = any value
    reason = "the owner ruled out fp8 KV cache: it degrades the model noticeably"

    [hosts.restart]                       # all optional; defaults shown
    python = "python3"                    # default: the launch program if it is a python, else python3
    flags_schema = "remote"               # or a bundled version such as "0.5.23" (app/flags/sglang-*.json)
    state_dir = "~/.kvwatch/gpu1"         # pid record, lease and last good flags, on the host
    log_dir = "<dir of server_log>"       # per-run logs: sglang-<run_id>.log
    stop_timeout = 120                    # s between SIGTERM and SIGKILL to the process group
    ready_timeout = 1800                  # s to wait for the ready line and GET /health
    poll_interval = 2.0
    max_restarts = 3                      # restart-loop cap: starts allowed ...
    restart_window = 600                  # ... per this many seconds (rollbacks count)
    allow_flags = []                      # flags beyond tuning a request may change, by name
                                          # (model-path, trust-remote-code, port...: app/flags/exposure.py)

Top-level `[presets.<name>]` and `[[vetoes]]` tables (same shape) apply to every host.
A request's flags (or a preset's) are laid over the launch flags, so a run's flags are always
`launch + request`: reproducible, and a change does not silently carry over an older experiment.
`EXAMPLE_PRESETS` are the three configurations of the tuning campaign this tool was made for.
Each table is a typed model (`PresetTable`, `VetoTable`, `RestartTable`, in app/config/controller.py),
validated with the whole config when it is read; `controller_config` turns a host's into its
ControllerConfig. `parse_controller_config` reads one raw `[[hosts]]` table on its own (tools, tests).
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kvwatch.app.config import Config, HostConfig
from kvwatch.app.config.controller import ControllerTables, PresetTable, RestartTable, VetoTable
from kvwatch.app.config.messages import validated
from kvwatch.app.errors import ConfigError
from kvwatch.app.flags.schema import FlagError, FlagValue, Schema

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Preset:
    name: str
    flags: dict[str, object]
    description: str = ""


@dataclass(frozen=True, slots=True)
class Veto:
    """A flag value the owner ruled out."""

    flag: str
    value: str
    reason: str

    def matches(self, schema: Schema, flags: dict[str, FlagValue]) -> bool:
        try:
            canonical = schema.resolve(self.flag)[0].name
        except FlagError:
            return False  # not a flag of this version: nothing to veto
        value = flags.get(canonical)
        if value is None:
            return False
        items = value if isinstance(value, list) else [value]
        return any(fnmatch.fnmatchcase(_text(item), self.value) for item in items)


def _text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


@dataclass(frozen=True, slots=True)
class RestartSettings:
    python: str
    flags_schema: str
    state_dir: str
    log_dir: str
    stop_timeout: float = 120.0
    ready_timeout: float = 1800.0
    poll_interval: float = 2.0
    max_restarts: int = 3
    restart_window: float = 600.0


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    host: str
    launch: str
    presets: dict[str, Preset] = field(default_factory=dict)
    vetoes: tuple[Veto, ...] = ()
    restart: RestartSettings = field(default_factory=lambda: RestartSettings("python3", "remote", "", ""))
    allow_flags: frozenset[str] = frozenset()  # guarded flags (app/flags/exposure.py) requests may change

    def veto_for(self, schema: Schema, flags: dict[str, FlagValue]) -> Veto | None:
        return next((veto for veto in self.vetoes if veto.matches(schema, flags)), None)


EXAMPLE_PRESETS = (
    Preset("default-085", {"mem-fraction-static": 0.85},
           "116K KV tokens, 35-50 concurrent decode reqs, 600-850 tok/s"),
    Preset("bf16-hicache-088", {"mem-fraction-static": 0.88, "enable-hierarchical-cache": True, "hicache-size": 48},
           "159K KV tokens, 72 concurrent, usage 0.96, queue 79, 930 tok/s (600-1300)"),
    Preset("fp8-hicache-090", {"mem-fraction-static": 0.90, "kv-cache-dtype": "fp8_e4m3",
                               "enable-hierarchical-cache": True, "hicache-size": 48},
           "376K KV tokens, 150 concurrent, usage 0.61-0.63, no queue, 1300-1450 tok/s (vetoed: fp8 KV)"),
)
EXAMPLE_VETO = Veto("kv-cache-dtype", "fp8*", "the owner ruled out fp8 KV cache: it degrades the model noticeably")


def controller_config(host: HostConfig, config: Config) -> ControllerConfig | None:
    """The controller part of a host of the (validated) config; None when it has no `launch`.

    The top-level `[presets.<name>]` and `[[vetoes]]` apply to every host (a host's own preset of the
    same name wins; vetoes add up)."""
    if host.launch is None:
        return None
    if not host.launch.strip():
        raise ConfigError(f"{config.path}: hosts[{host.name!r}].launch: expected a command line string")
    return _controller(host.name, host.launch, host.server_log, {**config.presets, **host.presets},
                       (*config.vetoes, *host.vetoes), host.restart)


def parse_controller_config(
    host_table: dict[str, Any], shared: dict[str, Any] | None = None, where: str | None = None
) -> ControllerConfig | None:
    """The controller part of one raw `[[hosts]]` table; None when it has no `launch`. Raises
    ConfigError, its line starting with `where` (the file) when given. `shared` holds the top-level
    `[presets.<name>]` and `[[vetoes]]` tables, as in controller_config."""
    name = str(host_table.get("name", "?"))
    file = f"{where}: " if where else ""
    launch = host_table.get("launch")
    if launch is None:
        if host_table.get("presets") or host_table.get("vetoes"):
            raise ConfigError(f"{file}hosts.{name}: presets and vetoes need a `launch` command")
        return None
    if not isinstance(launch, str) or not launch.strip():
        raise ConfigError(f"{file}hosts.{name}.launch: expected a command line string")
    common = validated(ControllerTables, {k: v for k, v in (shared or {}).items() if k != "restart"}, file)
    own = validated(ControllerTables, host_table, f"{file}hosts.{name}")
    server_log = host_table.get("server_log")
    return _controller(name, launch, server_log if isinstance(server_log, str) else None,
                       {**common.presets, **own.presets}, (*common.vetoes, *own.vetoes), own.restart)


def _controller(name: str, launch: str, server_log: str | None, presets: Mapping[str, PresetTable],
                vetoes: tuple[VetoTable, ...], restart: RestartTable) -> ControllerConfig:
    return ControllerConfig(
        host=name, launch=launch,
        presets={key: Preset(key, dict(p.flags), p.description) for key, p in presets.items()},
        vetoes=tuple(Veto(v.flag.removeprefix("--"), v.value, v.reason) for v in vetoes),
        restart=_restart(name, server_log, launch, restart), allow_flags=restart.allow_flags)


def _restart(host: str, server_log: str | None, launch: str, table: RestartTable) -> RestartSettings:
    """The settings with the host's own defaults: the launch's python, and paths named after the host."""
    state_dir = f"~/.kvwatch/{host}" if table.state_dir is None else table.state_dir
    log_dir = table.log_dir
    if log_dir is None:
        log_dir = posixpath.dirname(server_log) if server_log else f"{state_dir}/logs"
    timing = table.model_dump(include={"stop_timeout", "ready_timeout", "poll_interval", "max_restarts",
                                       "restart_window"})
    python = _launch_python(launch) if table.python is None else table.python
    return RestartSettings(python=python, flags_schema=table.flags_schema,
                           state_dir=state_dir, log_dir=log_dir, **timing)


def _launch_python(launch: str) -> str:
    try:
        tokens = shlex.split(launch)
    except ValueError:
        return "python3"
    program = next((t for t in tokens if not _ASSIGNMENT.fullmatch(t)), "")
    return program if os.path.basename(program).startswith("python") else "python3"
