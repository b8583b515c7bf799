"""`kvwatch serve --config kvwatch.toml`: collect from the configured hosts and serve the dashboard."""

from __future__ import annotations

import argparse
from pathlib import Path

from kvwatch.app.config import Config, default_config_path, load_config
from kvwatch.app.errors import ConfigError
from kvwatch.app.runner import serve

NAME = "serve"
HELP = "collect from the hosts in kvwatch.toml and serve the dashboard"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", "-c", type=Path, help="kvwatch.toml (default: ./kvwatch.toml, then XDG)")
    parser.add_argument("--host", help="bind address (overrides server.host; default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port (overrides server.port; default 8765)")
    parser.add_argument(
        "--no-collect",
        action="store_true",
        help="web app only: show what `kvwatch collect` processes write into the shared database",
    )


def resolve_config(path: Path | None) -> Config:
    """Load --config, or the first of ./kvwatch.toml and $XDG_CONFIG_HOME/kvwatch/kvwatch.toml."""
    found = path or default_config_path()
    if found is None:
        raise ConfigError("no config: pass --config FILE, create ./kvwatch.toml, or run `kvwatch init`")
    return load_config(found)


def run(args: argparse.Namespace) -> int:
    config = resolve_config(args.config)
    serve(config, args.host or config.server.host, args.port or config.server.port, collect=not args.no_collect)
    return 0
