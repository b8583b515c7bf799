"""Helpers the commands that read a store share: which host, which time, which store."""

from __future__ import annotations

import argparse
import datetime as dt
import os
from pathlib import Path

from kvwatch.app.commands.serve import resolve_config
from kvwatch.app.config import Config
from kvwatch.app.errors import ConfigError
from kvwatch.app.runner import database_path
from kvwatch.app.runs.registry import RUN_DOC
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


DEMO_DATABASE = "kvwatch.db"  # the store `kvwatch demo` keeps in its --workdir
DEMO_HOST = "demo"            # the demo's one host


def add_store_options(parser: argparse.ArgumentParser) -> None:
    """--db / --workdir: read a store without a config (a demo's, or one copied off a server)."""
    parser.add_argument("--db", metavar="PATH", help="SQLite path or postgresql:// URL to read (instead of --config)")
    parser.add_argument("--workdir", type=Path, metavar="DIR",
                        help=f"a `kvwatch demo --workdir` directory: read its {DEMO_DATABASE} (instead of --config)")


def chosen_database(args: argparse.Namespace) -> str | None:
    """The store --db or --workdir names; None when neither is given (the config's store is meant)."""
    db, workdir = getattr(args, "db", None), getattr(args, "workdir", None)
    if db and workdir:
        raise ConfigError("give --db or --workdir, not both")
    if (db or workdir) and getattr(args, "config", None):
        raise ConfigError("give --config or --db/--workdir, not both")
    return str(Path(workdir).expanduser() / DEMO_DATABASE) if workdir else db


def open_named_store(database: str) -> Store:
    """A store named on the command line; a SQLite file that does not exist is an error, not a new file."""
    if "://" not in database and not os.path.exists(database):
        raise ConfigError(f"{database} does not exist (`kvwatch demo` prints where its store is)")
    return open_store(database)


def stored_host(store: Store, name: str | None, args: argparse.Namespace) -> str:
    """--host, else the one host whose runs the store holds (a demo's workdir: the demo's host)."""
    if name is not None:
        return name
    hosts = sorted({str(d["host"]) for d in store.documents(RUN_DOC)})
    if len(hosts) == 1:
        return hosts[0]
    if not hosts and getattr(args, "workdir", None):
        return DEMO_HOST
    raise ConfigError(f"--host: pick one of {', '.join(hosts) or '(no runs in this store)'}")


def open_for_reading(args: argparse.Namespace) -> tuple[Store, str]:
    """The store and host a reading command (report, export) works on: --db/--workdir, else the config's."""
    database = chosen_database(args)
    if database is None:
        config = resolve_config(args.config)
        host = pick_host(config, args.host)
        return open_existing_store(config), host
    store = open_named_store(database)
    try:
        return store, stored_host(store, args.host, args)
    except ConfigError:
        store.close()
        raise
