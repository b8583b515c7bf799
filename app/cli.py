"""The `kvwatch` command line: one module per subcommand, listed in COMMANDS."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from types import ModuleType

from app.commands import demo, serve
from app.errors import KvwatchError

COMMANDS: tuple[ModuleType, ...] = (demo, serve)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kvwatch",
        description="Live throughput, KV-cache and queue dashboard for long SGLang/vLLM runs.",
    )
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        sub = subparsers.add_parser(command.NAME, help=command.HELP, description=command.HELP)
        command.add_arguments(sub)
        sub.set_defaults(run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return int(args.run(args))
    except KvwatchError as exc:
        print(f"kvwatch: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
