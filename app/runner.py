"""Serve the services built for a config (app/build.py) with uvicorn: shared by `serve` and `demo`;
`collect` runs them without a web app."""

from __future__ import annotations

import gc
import ipaddress
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

import uvicorn

from kvwatch.app.build import build_services, database_path
from kvwatch.app.config import Config, ServerConfig
from kvwatch.app.connection_budget import budget_options, quiet_server_logs
from kvwatch.app.errors import ConfigError
from kvwatch.app.main import answered_hosts, api_token, create_app
from kvwatch.app.reload import ConfigReloader
from kvwatch.app.services import Services

log = logging.getLogger(__name__)
__all__ = ["build_services", "check_bind", "collect", "database_path", "redacted", "serve", "uvicorn_options"]


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
    quiet_server_logs()
    freeze_startup_objects()
    uvicorn.run(app, host=host, port=port, **uvicorn_options(config.server), **budget_options(len(config.hosts)))


def freeze_startup_objects() -> None:
    """Leave what the imports and the build made (modules, classes, the config: hundreds of thousands
    of objects that live as long as the process) out of every later garbage collection. Without it
    each full collection walks them all again: on a 1M-line catch-up the fourteen full collections
    took 1.0 s of CPU, and 0.12 s with them frozen (BENCHMARKS.md, "Attach, tenth pass")."""
    gc.freeze()


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
    services = build_services(config, controllers=False, web=False)  # restarts are the web app's
    freeze_startup_objects()
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
