"""`kvwatch config check [--config FILE]`: read kvwatch.toml as `serve` would and print it resolved.

Every key is listed with the value in force (defaults filled in; a host's `[hosts.alerts]` shows only
what it sets over `[alerts]`), secrets as `***`; exit 0. An invalid config is the one-line error
(file, line, key path) and exit 2, as `serve` would stop with it. The key files a host names
(identity_file, known_hosts) are not opened: they may live on the machine that collects.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kvwatch.app.alerts import validate_alert_config
from kvwatch.app.commands.serve import resolve_config
from kvwatch.app.config.show import as_toml, resolved

NAME = "config"
HELP = "check kvwatch.toml and print it resolved (defaults filled in, secrets masked)"
ACTIONS = ("check",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=ACTIONS)
    parser.add_argument("--config", "-c", type=Path, help="kvwatch.toml (default: ./kvwatch.toml, then XDG)")


def run(args: argparse.Namespace) -> int:
    config = resolve_config(args.config)  # ConfigError: the CLI prints its one line and exits 2
    validate_alert_config(config)
    sys.stdout.write(f"# {config.path}: valid\n" + as_toml(resolved(config)))
    return 0
