"""kvwatch.toml: read once, validated field by field, every error one line naming file and field.

The keys are the ones DESIGN.md documents. Sections that other features own (presets, vetoes, alert
rules) are accepted by name in HOST_KEYS / TOP_KEYS and handed on as plain tables; anything else is
an error, so a typo never silently does nothing.
"""

from __future__ import annotations

import glob as globmod
import ipaddress
import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvwatch.app.errors import ConfigError
from kvwatch.app.trusted_hosts import host_pattern
from kvwatch.collectors.clock_infer import is_zone_name

SERVER_KEYS = frozenset(
    {"host", "port", "database", "token", "data_dir", "webhook", "retention_days", "allowed_hosts",
     "trusted_proxies"}
)
HOST_KEYS = frozenset(
    {
        "name", "ssh", "identity_file", "known_hosts", "server_log", "client_log", "outputs",
        "target_completions", "launch", "presets", "vetoes", "alerts", "restart", "metrics_port", "gpu",
        "timezone", "compare",
    }
)
TOP_KEYS = frozenset({"server", "hosts", "presets", "vetoes", "alerts"})
LOCAL = "local"
SECRET_KEYS = frozenset({"token", "webhook"})  # their values never appear in a message


@dataclass(frozen=True, slots=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8765
    database: str = "kvwatch.db"
    token: str | None = None
    data_dir: str = "."
    webhook: str | None = None
    retention_days: float | None = None  # raw samples older than this are pruned; None keeps them all
    allowed_hosts: tuple[str, ...] = ()  # Host names answered besides loopback and the bind address
    trusted_proxies: tuple[str, ...] = ()  # addresses/networks whose X-Forwarded-For is believed; none by default


@dataclass(frozen=True, slots=True)
class HostConfig:
    name: str
    ssh: str
    server_log: str
    client_log: str | None = None
    outputs: tuple[str, ...] = ()
    identity_file: str | None = None
    known_hosts: str | None = None
    target_completions: int | None = None
    launch: str | None = None
    metrics_port: int | None = None
    gpu: bool = False
    tables: dict[str, Any] = field(default_factory=dict)
    timezone: str | None = None  # IANA zone of the host's naive log stamps; None = detected

    @property
    def is_local(self) -> bool:
        return self.ssh == LOCAL

    @property
    def transport(self) -> str:
        """Its entry in collectors/transports.py: `ssh = "local"` is this machine, anything else SSH."""
        return "local" if self.is_local else "ssh"


@dataclass(frozen=True, slots=True)
class Config:
    server: ServerConfig
    hosts: tuple[HostConfig, ...]
    tables: dict[str, Any] = field(default_factory=dict)
    path: str = "<memory>"


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and validate kvwatch.toml."""
    where = str(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{where}: config file not found") from None
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read config file: {exc.strerror}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: not valid TOML: {exc}") from None
    return parse_config(data, where)


def parse_config(data: dict[str, Any], where: str = "<memory>") -> Config:
    _reject_unknown(data, TOP_KEYS, where, "")
    server = _parse_server(_table(data, "server", where), where)
    hosts_raw = data.get("hosts", [])
    if not isinstance(hosts_raw, list):
        raise ConfigError(f"{where}: hosts: expected [[hosts]] tables")
    hosts = tuple(_parse_host(h, i, where) for i, h in enumerate(hosts_raw))
    names = [h.name for h in hosts]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"{where}: hosts: duplicate name {duplicates[0]!r}")
    tables: dict[str, Any] = {k: data[k] for k in ("presets", "vetoes", "alerts") if k in data}
    return Config(server=server, hosts=hosts, tables=tables, path=where)


def _parse_server(table: dict[str, Any], where: str) -> ServerConfig:
    _reject_unknown(table, SERVER_KEYS, where, "server.")
    defaults = ServerConfig()
    port = _typed(table, "port", int, where, "server.", defaults.port)
    if not 0 < port < 65536:
        raise ConfigError(f"{where}: server.port: {port} is not a TCP port")
    return ServerConfig(
        host=_typed(table, "host", str, where, "server.", defaults.host),
        port=port,
        database=_typed(table, "database", str, where, "server.", defaults.database),
        token=_typed(table, "token", str, where, "server.", None),
        data_dir=_typed(table, "data_dir", str, where, "server.", defaults.data_dir),
        webhook=_typed(table, "webhook", str, where, "server.", None),
        retention_days=_retention_days(table, where),
        allowed_hosts=_allowed_hosts(table, where),
        trusted_proxies=_trusted_proxies(table, where),
    )


def _retention_days(table: dict[str, Any], where: str) -> float | None:
    value = table.get("retention_days")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(
            f"{where}: server.retention_days: expected a number of days, got {type(value).__name__} {value!r}"
        )
    # Under a day the alert rules and the page's live window would lose the raw samples they read.
    if not math.isfinite(value) or value < 1:
        raise ConfigError(f"{where}: server.retention_days: must be at least 1 (day), got {value!r}")
    return float(value)


def _allowed_hosts(table: dict[str, Any], where: str) -> tuple[str, ...]:
    value = table.get("allowed_hosts", [])
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise ConfigError(f"{where}: server.allowed_hosts: expected a list of host names")
    try:
        return tuple(host_pattern(name) for name in value)
    except ValueError as exc:
        raise ConfigError(f"{where}: server.allowed_hosts: {exc}") from None


def _trusted_proxies(table: dict[str, Any], where: str) -> tuple[str, ...]:
    """Proxies as uvicorn's forwarded_allow_ips takes them; `*` (believe anyone) is refused."""
    value = table.get("trusted_proxies", [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where}: server.trusted_proxies: expected a list of IP addresses or networks")
    for item in value:
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ConfigError(
                f"{where}: server.trusted_proxies: {item!r} is not an IP address or network (like 10.0.0.0/8)"
            ) from None
    return tuple(value)


def _parse_host(table: Any, index: int, where: str) -> HostConfig:
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: hosts[{index}]: expected a table")
    name = table.get("name")
    label = f"hosts[{name!r}]." if isinstance(name, str) else f"hosts[{index}]."
    _reject_unknown(table, HOST_KEYS, where, label)
    for required in ("name", "ssh", "server_log"):
        if required not in table:
            raise ConfigError(f"{where}: {label}{required}: missing (required)")
    outputs = table.get("outputs", [])
    if not isinstance(outputs, list) or not all(isinstance(o, str) and o for o in outputs):
        raise ConfigError(f"{where}: {label}outputs: expected a list of glob strings")
    for pattern in outputs:
        if globmod.has_magic(pattern) and ("[" in pattern and "]" not in pattern.split("[", 1)[1]):
            raise ConfigError(f"{where}: {label}outputs: bad glob {pattern!r} (unclosed '[')")
    target = _typed(table, "target_completions", int, where, label, None)
    if target is not None and target <= 0:
        raise ConfigError(f"{where}: {label}target_completions: must be positive, got {target}")
    tables: dict[str, Any] = {k: table[k] for k in ("presets", "vetoes", "alerts", "restart", "compare")
                              if k in table}
    return HostConfig(
        name=_typed(table, "name", str, where, label, ""),
        ssh=_typed(table, "ssh", str, where, label, ""),
        server_log=_typed(table, "server_log", str, where, label, ""),
        client_log=_typed(table, "client_log", str, where, label, None),
        outputs=tuple(outputs),
        identity_file=_typed(table, "identity_file", str, where, label, None),
        known_hosts=_typed(table, "known_hosts", str, where, label, None),
        target_completions=target,
        launch=_typed(table, "launch", str, where, label, None),
        metrics_port=_typed(table, "metrics_port", int, where, label, None),
        gpu=_typed(table, "gpu", bool, where, label, False),
        tables=tables,
        timezone=_timezone(table, where, label),
    )


def _timezone(table: dict[str, Any], where: str, label: str) -> str | None:
    zone: str | None = _typed(table, "timezone", str, where, label, None)
    if zone is not None and not is_zone_name(zone):
        raise ConfigError(f'{where}: {label}timezone: unknown zone {zone!r} (an IANA name such as "Asia/Shanghai")')
    return zone


def _table(data: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: {key}: expected a table")
    return value


def _typed(table: dict[str, Any], key: str, kind: type, where: str, label: str, default: Any) -> Any:
    if key not in table:
        return default
    value = table[key]
    # bool is an int in Python; a port of `true` is still wrong.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        shown = "(value not shown)" if key in SECRET_KEYS else repr(value)
        raise ConfigError(f"{where}: {label}{key}: expected {kind.__name__}, got {type(value).__name__} {shown}")
    if kind is str and not value and key in ("name", "ssh", "server_log"):
        raise ConfigError(f"{where}: {label}{key}: must not be empty")
    return value


def _reject_unknown(table: dict[str, Any], allowed: frozenset[str], where: str, label: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ConfigError(f"{where}: {label}{unknown[0]}: unknown key (allowed: {', '.join(sorted(allowed))})")


def default_config_path() -> Path | None:
    """The config commands read without --config: ./kvwatch.toml, then $XDG_CONFIG_HOME/kvwatch/kvwatch.toml."""
    xdg = Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config"))
    for candidate in (Path("kvwatch.toml"), xdg / "kvwatch" / "kvwatch.toml"):
        if candidate.is_file():
            return candidate
    return None
