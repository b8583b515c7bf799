"""`kvwatch serve --config kvwatch.toml`: collect from the configured hosts and serve the dashboard."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from app.config import load_config
from app.errors import ConfigError
from app.runner import serve

NAME = "serve"
HELP = "collect from the hosts in kvwatch.toml and serve the dashboard"


def default_config_path() -> Path | None:
    """./kvwatch.toml, then $XDG_CONFIG_HOME/kvwatch/kvwatch.toml."""
    xdg = Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config"))
    for candidate in (Path("kvwatch.toml"), xdg / "kvwatch" / "kvwatch.toml"):
        if candidate.is_file():
            return candidate
    return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", "-c", type=Path, help="kvwatch.toml (default: ./kvwatch.toml, then XDG)")
    parser.add_argument("--host", help="bind address (overrides server.host; default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port (overrides server.port; default 8765)")


def run(args: argparse.Namespace) -> int:
    path = args.config or default_config_path()
    if path is None:
        raise ConfigError("no config: pass --config FILE or create ./kvwatch.toml")
    config = load_config(path)
    serve(config, args.host or config.server.host, args.port or config.server.port)
    return 0
