"""Build the services for a config and serve them with uvicorn: shared by `serve` and `demo`."""

from __future__ import annotations

import ipaddress
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvicorn

from kvwatch.app.alerts import validate_alert_config
from kvwatch.app.config import Config, ServerConfig
from kvwatch.app.config_files import check_host_files
from kvwatch.app.errors import ConfigError
from kvwatch.app.main import answered_hosts, api_token, create_app
from kvwatch.app.pipeline.collector import HostCollector
from kvwatch.app.pipeline.heartbeat import Heartbeat, claim_hosts, this_owner
from kvwatch.app.pipeline.relay import StoreRelay
from kvwatch.app.pipeline.retention import DAY_S, Retention
from kvwatch.app.reload import ConfigReloader
from kvwatch.app.services import Services
from kvwatch.app.store import open_store
from kvwatch.app.transports import open_transport

log = logging.getLogger(__name__)


MIN_TOKEN_CHARS = 32  # 128 bits as hex; `kvwatch init` writes 43 base64url characters (256 bits)
PLACEHOLDER_TOKEN = "change-me"  # the example env file's value, which someone will forget to replace


def check_bind(host: str, token: str | None) -> None:
    """Anything but loopback is refused unless a strong enough token protects the mutating endpoints."""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if loopback:
        return
    if not token:
        raise ConfigError(
            f"server.host: refusing to bind {host} without a token; set KVWATCH_TOKEN or server.token"
        )
    field = "KVWATCH_TOKEN" if os.environ.get("KVWATCH_TOKEN") else "server.token"
    if len(token) < MIN_TOKEN_CHARS or PLACEHOLDER_TOKEN in token.lower() or len(set(token)) < 8:
        raise ConfigError(
            f"{field}: too weak to bind {host}: use at least {MIN_TOKEN_CHARS} random characters "
            f"(python -c 'import secrets; print(secrets.token_urlsafe(32))', or the one `kvwatch init` writes)"
        )


def database_path(config: Config) -> str:
    database = config.server.database
    if database.startswith(("postgresql://", "postgres://")) or os.path.isabs(database):
        return database
    return str(Path(config.server.data_dir).expanduser() / database)


def build_services(config: Config, collect: bool = True) -> Services:
    """The store and one collector a host; with `collect=False` a web app reading what others collect."""
    validate_alert_config(config)  # a bad [alerts] field stops the start with one line, before serving
    check_host_files(config)
    services = Services(config=config, store=open_store(database_path(config)))
    if not collect:
        services.background.append(StoreRelay(services))
        return services
    try:
        claim_hosts(services.store, (h.name for h in config.hosts), this_owner())
    except ConfigError:
        services.store.close()
        raise
    for host in config.hosts:
        services.collectors[host.name] = HostCollector(host, services.store, services.bus, open_transport)
    # Health (and the hosts' leases) in the store, for a web app in another process.
    services.background.append(Heartbeat(services.store, services.collectors))
    if config.server.retention_days is not None:  # the collecting process prunes the hosts it owns
        keep_s = config.server.retention_days * DAY_S
        services.background.append(Retention(services.store, lambda: tuple(services.collectors), keep_s))
    return services


def serve(
    config: Config, host: str, port: int, collect: bool = True, after_start: Callable[[Services], None] | None = None
) -> None:
    token = api_token(config)
    check_bind(host, token)
    answered_hosts(config, host)  # a bad KVWATCH_ALLOWED_HOSTS stops the start before anything runs
    services = build_services(config, collect=collect)
    app = create_app(services, bind=host)
    if after_start is not None:
        after_start(services)
    log.info("kvwatch on http://%s:%d (%d hosts%s)", host, port, len(config.hosts), "" if collect else ", web only")
    if os.path.isfile(config.path):
        ConfigReloader(services, config.path, controllers=True, collect=collect).install()
    uvicorn.run(app, host=host, port=port, **uvicorn_options(config.server))


def uvicorn_options(server: ServerConfig) -> dict[str, Any]:
    """uvicorn's settings besides host and port. X-Forwarded-For/-Proto are believed only from
    `server.trusted_proxies`: uvicorn's default believes them from 127.0.0.1, so any local process could
    pick the client address that the restart rate limit and the audit record go by."""
    proxies = list(server.trusted_proxies)
    return {"log_level": "warning", "timeout_graceful_shutdown": 2,
            "proxy_headers": bool(proxies), "forwarded_allow_ips": proxies}


def collect(config: Config, stop: threading.Event, narrow: Callable[[Config], Config] | None = None) -> None:
    """Collect the config's hosts into its store, without a web app, until `stop` is set.

    SIGHUP reloads the file like `serve` does; `narrow` picks this process's hosts from a reloaded file."""
    services = build_services(config)
    services.start_collectors()
    if os.path.isfile(config.path):
        ConfigReloader(services, config.path, narrow=narrow).install()
    log.info("collecting %d hosts into %s", len(config.hosts), redacted(database_path(config)))
    try:
        stop.wait()
    finally:
        services.stop()


def redacted(database: str) -> str:
    """A database URL for the log, without its password."""
    if "://" not in database or "@" not in database:
        return database
    scheme, rest = database.split("://", 1)
    credentials, location = rest.rsplit("@", 1)
    return f"{scheme}://{credentials.split(':', 1)[0]}@{location}"
