"""`[server]`: where kvwatch listens, what it stores, who may reach it; and the value checks of the
scalar keys that `[server]` and `[[hosts]]` share (`Str`, `OptStr`, ...)."""

from __future__ import annotations

import ipaddress
import math
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BeforeValidator, ValidationInfo

from kvwatch.app.config.tables import Table, invalid
from kvwatch.app.trusted_hosts import host_pattern

SECRET_KEYS = frozenset({"token", "webhook"})  # their values never appear in a message
NON_EMPTY = frozenset({"name", "ssh", "server_log"})


def typed(kind: type, optional: bool = False) -> BeforeValidator:
    """A value of exactly `kind` (bool is an int in Python; a port of `true` is still wrong). None
    only where `optional`: TOML has no null, so only code passes it, meaning "not set"."""

    def check(value: Any, info: ValidationInfo) -> Any:
        if value is None and optional:
            return None
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


def _retention_days(value: Any) -> float | None:
    if value is None:  # built in code: keep every sample
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        invalid(f"expected a number of days, got {type(value).__name__} {value!r}")
    # Under a day the alert rules and the page's live window would lose the raw samples they read.
    if not math.isfinite(value) or value < 1:
        invalid(f"must be at least 1 (day), got {value!r}")
    return float(value)


def strings(value: Any, expected: str) -> tuple[str, ...]:
    """A TOML array of strings (or a tuple, from code), else `expected` as the error."""
    if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
        invalid(expected)
    return tuple(value)


def _allowed_hosts(value: Any) -> tuple[str, ...]:
    try:
        return tuple(host_pattern(name) for name in strings(value, "expected a list of host names"))
    except ValueError as exc:
        invalid(str(exc))


def _trusted_proxies(value: Any) -> tuple[str, ...]:
    """Proxies as uvicorn's forwarded_allow_ips takes them; `*` (believe anyone) is refused."""
    for item in strings(value, "expected a list of IP addresses or networks"):
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            invalid(f"{item!r} is not an IP address or network (like 10.0.0.0/8)")
    return tuple(value)


Str = Annotated[str, typed(str)]
OptStr = Annotated[str | None, typed(str, optional=True)]
OptInt = Annotated[int | None, typed(int, optional=True)]


class ServerConfig(Table):
    """`[server]`, its fields in the order they are checked."""

    unknown: ClassVar[str] = ".{key}: unknown key (allowed: {allowed_sorted})"
    port: Annotated[int, typed(int), AfterValidator(_port)] = 8765
    host: Str = "127.0.0.1"
    database: Str = "kvwatch.db"
    token: OptStr = None
    data_dir: Str = "."
    webhook: OptStr = None
    # raw samples older than this are pruned; none keeps them all
    retention_days: Annotated[float | None, BeforeValidator(_retention_days)] = None
    # Host names answered besides loopback and the bind address
    allowed_hosts: Annotated[tuple[str, ...], BeforeValidator(_allowed_hosts)] = ()
    # addresses/networks whose X-Forwarded-For is believed; none by default
    trusted_proxies: Annotated[tuple[str, ...], BeforeValidator(_trusted_proxies)] = ()

    @property
    def database_password(self) -> bool:
        """Does `database` hold a password (postgresql://user:secret@host/db)?"""
        userinfo = self.database.split("@")[0].removeprefix("postgresql://").removeprefix("postgres://")
        return "@" in self.database and ":" in userinfo


ServerTable = ServerConfig  # the name the docs' table list uses
