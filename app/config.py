"""kvwatch.toml: read once, validated field by field, every error one line naming file and field.

The keys are the ones docs/config.md lists: `[server]` and each `[[hosts]]` table are typed models
(`ServerTable`, `HostTable`, on app/config_tables.py), read into the frozen `ServerConfig` and
`HostConfig` the rest of kvwatch uses. Sections that other features own (presets, vetoes, alert rules,
restart, compare) are accepted by name and handed on as plain tables, which their owners validate
with models of their own; anything else is an error, so a typo never silently does nothing.
"""

from __future__ import annotations

import dataclasses
import glob as globmod
import ipaddress
import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BeforeValidator, ValidationInfo

from kvwatch.app.config_tables import Table, invalid, validated
from kvwatch.app.errors import ConfigError
from kvwatch.app.trusted_hosts import host_pattern
from kvwatch.collectors.base import Transport
from kvwatch.collectors.clock_infer import is_zone_name
from kvwatch.collectors.transports import TransportSpec, open_transport

LOCAL = "local"
SECRET_KEYS = frozenset({"token", "webhook"})  # their values never appear in a message
NON_EMPTY = frozenset({"name", "ssh", "server_log"})
HOST_TABLES = ("presets", "vetoes", "alerts", "restart", "compare", "campaign")  # handed on to their owners


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
    group: str | None = None  # the job the host's run belongs to: the fleet view totals by group

    @property
    def is_local(self) -> bool:
        return self.ssh == LOCAL

    @property
    def transport(self) -> str:
        """Its entry in collectors/transports.py: `ssh = "local"` is this machine, anything else SSH."""
        return "local" if self.is_local else "ssh"

    def open_transport(self) -> Transport:
        """A connected Transport to this host, through the collectors' registry by name."""
        return open_transport(self.transport, TransportSpec(self.name, self.ssh, self.identity_file, self.known_hosts))


@dataclass(frozen=True, slots=True)
class Config:
    server: ServerConfig
    hosts: tuple[HostConfig, ...]
    tables: dict[str, Any] = field(default_factory=dict)
    path: str = "<memory>"


def _typed(kind: type) -> BeforeValidator:
    """A value of exactly `kind` (bool is an int in Python; a port of `true` is still wrong)."""

    def check(value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            shown = "(value not shown)" if info.field_name in SECRET_KEYS else repr(value)
            invalid(f"expected {kind.__name__}, got {type(value).__name__} {shown}")
        if kind is str and not value and info.field_name in NON_EMPTY:
            invalid("must not be empty")
        return value

    return BeforeValidator(check)


def _port(value: int) -> int:
    if not 0 < value < 65536:
        invalid(f"{value} is not a TCP port")
    return value


def _retention_days(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        invalid(f"expected a number of days, got {type(value).__name__} {value!r}")
    # Under a day the alert rules and the page's live window would lose the raw samples they read.
    if not math.isfinite(value) or value < 1:
        invalid(f"must be at least 1 (day), got {value!r}")
    return float(value)


def _allowed_hosts(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        invalid("expected a list of host names")
    try:
        return tuple(host_pattern(name) for name in value)
    except ValueError as exc:
        invalid(str(exc))


def _trusted_proxies(value: Any) -> tuple[str, ...]:
    """Proxies as uvicorn's forwarded_allow_ips takes them; `*` (believe anyone) is refused."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        invalid("expected a list of IP addresses or networks")
    for item in value:
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            invalid(f"{item!r} is not an IP address or network (like 10.0.0.0/8)")
    return tuple(value)


def _outputs(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(o, str) and o for o in value):
        invalid("expected a list of glob strings")
    for pattern in value:
        if globmod.has_magic(pattern) and ("[" in pattern and "]" not in pattern.split("[", 1)[1]):
            invalid(f"bad glob {pattern!r} (unclosed '[')")
    return tuple(value)


def _positive_count(value: int | None) -> int | None:
    if value is not None and value <= 0:
        invalid(f"must be positive, got {value}")
    return value


def _zone(value: str | None) -> str | None:
    if value is not None and not is_zone_name(value):
        invalid(f'unknown zone {value!r} (an IANA name such as "Asia/Shanghai")')
    return value


Str = Annotated[str, _typed(str)]
OptStr = Annotated[str | None, _typed(str)]
OptInt = Annotated[int | None, _typed(int)]
_DEFAULTS: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(ServerConfig)}


class ServerTable(Table):
    """`[server]`, its fields in the order they are checked."""

    unknown: ClassVar[str] = ".{key}: unknown key (allowed: {allowed_sorted})"
    port: Annotated[int, _typed(int), AfterValidator(_port)] = _DEFAULTS["port"]
    host: Str = _DEFAULTS["host"]
    database: Str = _DEFAULTS["database"]
    token: OptStr = None
    data_dir: Str = _DEFAULTS["data_dir"]
    webhook: OptStr = None
    retention_days: Annotated[float | None, BeforeValidator(_retention_days)] = None
    allowed_hosts: Annotated[tuple[str, ...], BeforeValidator(_allowed_hosts)] = ()
    trusted_proxies: Annotated[tuple[str, ...], BeforeValidator(_trusted_proxies)] = ()


class HostTable(Table):
    """One `[[hosts]]` table, its fields in the order they are checked; the tables other parts own
    (HOST_TABLES) are taken as they are."""

    unknown: ClassVar[str] = ".{key}: unknown key (allowed: {allowed_sorted})"
    outputs: Annotated[tuple[str, ...], BeforeValidator(_outputs)] = ()  # checked before the required keys' types
    target_completions: Annotated[int | None, _typed(int), AfterValidator(_positive_count)] = None
    name: Str
    ssh: Str
    server_log: Str
    client_log: OptStr = None
    identity_file: OptStr = None
    known_hosts: OptStr = None
    launch: OptStr = None
    metrics_port: OptInt = None
    gpu: Annotated[bool, _typed(bool)] = False
    timezone: Annotated[str | None, _typed(str), AfterValidator(_zone)] = None
    group: OptStr = None
    presets: Any = None
    vetoes: Any = None
    alerts: Any = None
    restart: Any = None
    compare: Any = None
    campaign: Any = None

    def host_config(self) -> HostConfig:
        fields = self.model_dump(exclude=set(HOST_TABLES))
        return HostConfig(**fields, tables={key: getattr(self, key) for key in HOST_TABLES
                                            if key in self.model_fields_set})


class ConfigFile(Table):
    """The file's top level: which tables it may have (each is read by its own model)."""

    unknown: ClassVar[str] = "{key}: unknown key (allowed: {allowed_sorted})"
    server: Any = None
    hosts: Any = None
    presets: Any = None
    vetoes: Any = None
    alerts: Any = None


SERVER_KEYS = frozenset(ServerTable.keys())
HOST_KEYS = frozenset(HostTable.keys())
TOP_KEYS = frozenset(ConfigFile.keys())


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
    config = parse_config(data, where)
    _refuse_world_readable_secrets(Path(path), config)
    return config


def _refuse_world_readable_secrets(path: Path, config: Config) -> None:
    """A config that holds the control token (or a database password) must not be readable by every
    user of the machine: whoever reads it can restart the server."""
    held = [name for name, present in (
        ("server.token", bool(config.server.token)),
        ("the database password", "@" in config.server.database and ":" in config.server.database.split("@")[0]
         .removeprefix("postgresql://").removeprefix("postgres://")),
    ) if present]
    if not held:
        return
    mode = path.stat().st_mode & 0o777
    if mode & 0o004:
        raise ConfigError(
            f"{path}: holds {' and '.join(held)} and is readable by every user (mode {mode:04o});"
            f" chmod 600 {path}, or set the token in KVWATCH_TOKEN instead"
        )


def parse_config(data: dict[str, Any], where: str = "<memory>") -> Config:
    validated(ConfigFile, data, where)
    server = ServerConfig(**validated(ServerTable, data.get("server", {}), f"{where}: server").model_dump())
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


def _parse_host(table: Any, index: int, where: str) -> HostConfig:
    name = table.get("name") if isinstance(table, dict) else None
    label = f"hosts[{name!r}]" if isinstance(name, str) else f"hosts[{index}]"
    return validated(HostTable, table, f"{where}: {label}").host_config()


def default_config_path() -> Path | None:
    """The config commands read without --config: ./kvwatch.toml, then $XDG_CONFIG_HOME/kvwatch/kvwatch.toml."""
    xdg = Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config"))
    for candidate in (Path("kvwatch.toml"), xdg / "kvwatch" / "kvwatch.toml"):
        if candidate.is_file():
            return candidate
    return None
