"""`kvwatch collect --config kvwatch.toml [--only NAME,...]`: collect into the store, serve nothing.

The scale-out half of `kvwatch serve`: several collectors, each owning some hosts, write into one
PostgreSQL, and one `kvwatch serve --no-collect` shows them all. SIGHUP reloads kvwatch.toml as in
`serve` (app/reload.py): a bad file is logged and the running hosts go on.
"""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path
from types import FrameType

from kvwatch.app.commands.serve import resolve_config
from kvwatch.app.config import Config
from kvwatch.app.errors import ConfigError
from kvwatch.app.runner import collect

NAME = "collect"
HELP = "collect from the hosts in kvwatch.toml into its database, without the web app"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", "-c", type=Path, help="kvwatch.toml (default: ./kvwatch.toml, then XDG)")
    parser.add_argument(
        "--only", metavar="NAME,...", help="collect only these [[hosts]] (the others belong to other collectors)"
    )


def only_hosts(config: Config, only: str | None) -> Config:
    """The config narrowed to the named hosts; an unknown name is an error, not a silent no-op."""
    if not only:
        return config
    names = [n.strip() for n in only.split(",") if n.strip()]
    known = {h.name for h in config.hosts}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError(f"--only: no host named {unknown[0]!r} in {config.path} (hosts: {', '.join(sorted(known))})")
    return config.model_copy(update={"hosts": tuple(h for h in config.hosts if h.name in names)})


def collected(config: Config, only: str | None) -> Config:
    """This process's hosts, at start and on every reload (SIGHUP): an empty share is an error."""
    config = only_hosts(config, only)
    if not config.hosts:
        raise ConfigError(f"{config.path}: no [[hosts]] to collect")
    return config


def run(args: argparse.Namespace) -> int:
    config = collected(resolve_config(args.config), args.only)
    stop = threading.Event()

    def on_term(signum: int, frame: FrameType | None) -> None:
        stop.set()

    # SIGTERM (docker stop, systemd) is a normal end; Ctrl-C stays KeyboardInterrupt (exit 130).
    signal.signal(signal.SIGTERM, on_term)
    collect(config, stop, narrow=lambda reloaded: collected(reloaded, args.only))
    return 0
