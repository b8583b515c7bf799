"""`kvwatch status`: each host of a running kvwatch now, in one compact block (or as JSON).

kvwatch status [--host H] [--json [--flags non-default|all]] [--watch SECONDS] [--url URL]

Read-only over the HTTP API (no token); the URL is --url, else $KVWATCH_URL, else the [server] of
the discovered kvwatch.toml, else http://127.0.0.1:8765. --json prints one object with --host and a
list of objects without it; with --watch, one compact JSON document per line per refresh. Its
`run.flags` are the run's non-default flags (SGLang logs about 500 at start); `--flags all` keeps them all.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from kvwatch.app.mcp.shape import trimmed_status
from kvwatch.app.terminal.client import ApiClient, resolve_url
from kvwatch.app.terminal.gather import gather
from kvwatch.app.terminal.render import render_all
from kvwatch.app.terminal.safe import neutralised
from kvwatch.app.terminal.screen import watch

NAME = "status"
HELP = "show each host of a running kvwatch now: server, client, outputs, alerts, diagnosis"


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help="kvwatch to read (default: $KVWATCH_URL, else the config's [server])")
    parser.add_argument("--config", "-c", type=Path, help="kvwatch.toml whose [server] to read (default: discovered)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="only this host (--json then prints one object, not a list)")
    parser.add_argument("--json", action="store_true", help="print the same as data")
    parser.add_argument("--flags", choices=("non-default", "all"), default="non-default",
                        help="--json: the run's non-default flags (default) or all of them")
    parser.add_argument("--watch", type=positive_seconds, metavar="SECONDS", help="refresh every SECONDS")
    add_connection_arguments(parser)


def use_colour(stream: Any) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set or TERM is dumb."""
    tty = bool(getattr(stream, "isatty", lambda: False)())
    return tty and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


def as_json(statuses: list[dict[str, Any]], one_host: bool, compact: bool) -> str:
    data: Any = statuses[0] if one_host else statuses
    return json.dumps(data, separators=(",", ":")) + "\n" if compact else json.dumps(data, indent=2) + "\n"


def connect(args: argparse.Namespace) -> ApiClient:
    return ApiClient(resolve_url(args.url, os.environ, args.config))


def run(args: argparse.Namespace) -> int:
    client = connect(args)
    colour = use_colour(sys.stdout)
    in_place = sys.stdout.isatty() and not args.json  # a pipe gets every refresh appended

    def draw() -> str:
        statuses = gather(client, args.host)
        if args.json:
            statuses = [trimmed_status(s, all_flags=args.flags == "all") for s in statuses]
            return as_json(statuses, args.host is not None, compact=args.watch is not None)
        text = render_all(neutralised(statuses), colour)
        return text if in_place or args.watch is None else text + "\n"

    try:
        if args.watch is None:
            sys.stdout.write(draw())
            sys.stdout.flush()
        else:
            watch(draw, args.watch, sys.stdout, in_place=in_place)
    except BrokenPipeError:
        # The reader had enough (`kvwatch status --watch 1 | head`): not a failure. Python would
        # complain again flushing stdout at exit; point it at /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
