"""Build the services for a config and serve them with uvicorn: shared by `serve` and `demo`."""

from __future__ import annotations

import ipaddress
import logging
import os
from pathlib import Path

import uvicorn

from app.config import Config
from app.errors import ConfigError
from app.main import create_app
from app.pipeline.collector import HostCollector
from app.pipeline.transports import open_transport
from app.services import Services
from app.store import open_store

log = logging.getLogger(__name__)


def api_token(config: Config) -> str | None:
    return os.environ.get("KVWATCH_TOKEN") or config.server.token


def check_bind(host: str, token: str | None) -> None:
    """Anything but loopback is refused unless a token protects the mutating endpoints."""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback and not token:
        raise ConfigError(
            f"server.host: refusing to bind {host} without a token; set KVWATCH_TOKEN or server.token"
        )


def database_path(config: Config) -> str:
    database = config.server.database
    if database.startswith(("postgresql://", "postgres://")) or os.path.isabs(database):
        return database
    return str(Path(config.server.data_dir).expanduser() / database)


def build_services(config: Config) -> Services:
    services = Services(config=config, store=open_store(database_path(config)))
    for host in config.hosts:
        services.collectors[host.name] = HostCollector(host, services.store, services.bus, open_transport)
    return services


def serve(config: Config, host: str, port: int) -> None:
    token = api_token(config)
    check_bind(host, token)
    services = build_services(config)
    app = create_app(services)
    app.state.api_token = token
    log.info("kvwatch on http://%s:%d (%d hosts)", host, port, len(config.hosts))
    uvicorn.run(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=2)
