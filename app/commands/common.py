"""Helpers the commands that read a store share: which host, which time, which store."""

from __future__ import annotations

import argparse
import datetime as dt
import os

from kvwatch.app.config import Config
from kvwatch.app.errors import ConfigError
from kvwatch.app.runner import database_path
from kvwatch.app.store import Store, open_store


def timestamp(text: str) -> float:
    """Epoch seconds, or ISO 8601 read as UTC when it has no zone (as kvwatch reads log times)."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither ISO 8601 nor epoch seconds") from None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)).timestamp()


def pick_host(config: Config, name: str | None) -> str:
    names = [h.name for h in config.hosts]
    if name is None:
        if len(names) != 1:
            raise ConfigError(f"--host: pick one of {', '.join(names) or '(no hosts in ' + config.path + ')'}")
        return names[0]
    if name not in names:
        raise ConfigError(f"--host: no host named {name!r} in {config.path} (hosts: {', '.join(names)})")
    return name


def open_existing_store(config: Config) -> Store:
    """The config's store; a SQLite file that does not exist yet is an error, not a new empty file."""
    database = database_path(config)
    if "://" not in database and not os.path.exists(database):
        raise ConfigError(f"server.database: {database} does not exist (has `kvwatch serve` run with this config?)")
    return open_store(database)
