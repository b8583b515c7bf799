"""The `kvwatch` command line: one module per subcommand (app/commands/NAME.py), listed in COMMAND_NAMES.

Only the module of the command being run is imported: `kvwatch parse` should not pay for importing
the web app (about 1 s of CPU), and a broken optional import cannot break every other command.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType

from kvwatch.app.errors import KvwatchError

COMMAND_NAMES: tuple[str, ...] = (
    "demo", "serve", "collect", "parse", "compare", "report", "export", "init", "status", "wait",
    "diagnose", "mcp", "campaign", "config",
)
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
EPILOG = """\
config: --config FILE, else ./kvwatch.toml, else $XDG_CONFIG_HOME/kvwatch/kvwatch.toml
        (`kvwatch init` writes a commented one from your ~/.ssh/config hosts)
environment: KVWATCH_TOKEN  token for mutating endpoints (overrides server.token)
             KVWATCH_URL    the running kvwatch that `status`, `wait` and `diagnose` ask (else the config's [server])

exit codes:
  0    success
  1    runtime failure (a bug or an environment problem kvwatch could not name)
  2    usage or config error (one line on stderr names the option, file or field)
  124  `kvwatch wait`: its --timeout passed before the condition held
  130  interrupted (Ctrl-C)

`kvwatch COMMAND --help` describes each command."""


def load_command(name: str) -> ModuleType:
    return importlib.import_module(f"kvwatch.app.commands.{name}")


def __getattr__(name: str) -> tuple[ModuleType, ...]:
    # `COMMANDS` stays available (every command module, imported on first use).
    if name == "COMMANDS":
        return tuple(load_command(n) for n in COMMAND_NAMES)
    raise AttributeError(name)


def installed_version() -> str:
    try:
        return version("kvwatch")
    except PackageNotFoundError:  # imported from a checkout that was never installed
        return "unknown"


def build_parser(commands: Sequence[ModuleType] | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kvwatch",
        description="Live throughput, KV-cache and queue dashboard for long SGLang/vLLM runs.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"kvwatch {installed_version()}")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in commands if commands is not None else __getattr__("COMMANDS"):
        sub = subparsers.add_parser(command.NAME, help=command.HELP, description=command.HELP)
        command.add_arguments(sub)
        sub.set_defaults(run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    wanted = next((w for w in words if not w.startswith("-")), None)
    # The command named on the line is enough to parse it; anything else (help, typos) lists them all.
    commands = [load_command(wanted)] if wanted in COMMAND_NAMES else ([] if "--version" in words else None)
    args = build_parser(commands).parse_args(words)
    # Plain lines with levels on stderr: greppable, and what journald or `docker logs` expect.
    logging.basicConfig(level=args.log_level, format=LOG_FORMAT)
    try:
        return int(args.run(args))
    except KvwatchError as exc:
        print(f"kvwatch: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception:
        # Not a user error: the traceback is what a bug report needs.
        logging.getLogger("kvwatch").exception("unexpected failure")
        return 1


if __name__ == "__main__":
    sys.exit(main())
