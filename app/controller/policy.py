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
validated with the whole config when it is read; `controller_config` gathers a host's into its
ControllerConfig (the same models, the shared presets and vetoes laid under the host's own).
`parse_controller_config` reads one raw `[[hosts]]` table on its own (tools, tests).
"""

from __future__ import annotations

from typing import Any

from kvwatch.app.config import Config, HostConfig
from kvwatch.app.config.controller import ControllerConfig, ControllerTables, PresetTable, VetoTable
from kvwatch.app.config.messages import validated
from kvwatch.app.errors import ConfigError

EXAMPLE_PRESETS = {
    "default-085": PresetTable(flags={"mem-fraction-static": 0.85},
                               description="116K KV tokens, 35-50 concurrent decode reqs, 600-850 tok/s"),
    "bf16-hicache-088": PresetTable(
        flags={"mem-fraction-static": 0.88, "enable-hierarchical-cache": True, "hicache-size": 48},
        description="159K KV tokens, 72 concurrent, usage 0.96, queue 79, 930 tok/s (600-1300)"),
    "fp8-hicache-090": PresetTable(
        flags={"mem-fraction-static": 0.90, "kv-cache-dtype": "fp8_e4m3", "enable-hierarchical-cache": True,
               "hicache-size": 48},
        description="376K KV tokens, 150 concurrent, usage 0.61-0.63, no queue, 1300-1450 tok/s (vetoed: fp8 KV)"),
}
EXAMPLE_VETO = VetoTable(flag="kv-cache-dtype", value="fp8*",
                         reason="the owner ruled out fp8 KV cache: it degrades the model noticeably")


def controller_config(host: HostConfig, config: Config) -> ControllerConfig | None:
    """The controller part of a host of the (validated) config; None when it has no `launch`.

    The top-level `[presets.<name>]` and `[[vetoes]]` apply to every host (a host's own preset of the
    same name wins; vetoes add up)."""
    if host.launch is None:
        return None
    if not host.launch.strip():
        raise ConfigError(f"{config.path}: hosts[{host.name!r}].launch: expected a command line string")
    return ControllerConfig(host=host.name, launch=host.launch, server_log=host.server_log,
                            presets={**config.presets, **host.presets}, vetoes=(*config.vetoes, *host.vetoes),
                            restart=host.restart)


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
    return ControllerConfig(host=name, launch=launch, server_log=server_log if isinstance(server_log, str) else None,
                            presets={**common.presets, **own.presets}, vetoes=(*common.vetoes, *own.vetoes),
                            restart=own.restart)
