"""`kvwatch wait`: block until a host's condition holds, then print its status block (exit 0).

kvwatch wait --host H --until steady|ready|alert[=RULE]|completions>=N [--timeout S] [--url URL]

Exit codes: 0 met; 124 the timeout passed first (as timeout(1)); 2 bad usage (unknown condition or
host); 1 kvwatch cannot be reached (at the first poll, or for UNREACHABLE_GRACE_S in a row later on).
`kvwatch wait --host gpu1 --until steady && kvwatch compare ...` replaces a guessed `sleep`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any
from urllib.parse import quote

from kvwatch.app.commands.status import add_connection_arguments, connect, positive_seconds, use_colour
from kvwatch.app.terminal.client import ApiClient, ApiError, Unreachable
from kvwatch.app.terminal.conditions import USAGE, Condition, current_run_id, met, parse_condition, progress_note
from kvwatch.app.terminal.gather import diagnosis, host_status, with_verdict
from kvwatch.app.terminal.render import render_block
from kvwatch.app.terminal.safe import neutralised

NAME = "wait"
HELP = "block until a host is steady, ready, alerting or has N completions, then print its status"
TIMED_OUT = 124
DEFAULT_INTERVAL_S = 2.0
UNREACHABLE_GRACE_S = 30.0  # a kvwatch restarting mid-wait is waited for this long


def condition(text: str) -> Condition:
    try:
        return parse_condition(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def seconds_or_zero(text: str) -> float:
    """--timeout: 0 checks once (exit 0 or 124 at once)."""
    try:
        return 0.0 if float(text) == 0 else positive_seconds(text)
    except ValueError:
        return positive_seconds(text)  # names the bad value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", required=True, help="the host to watch")
    parser.add_argument("--until", required=True, type=condition, metavar="CONDITION", help=USAGE)
    parser.add_argument("--timeout", type=seconds_or_zero, metavar="S",
                        help="give up after S seconds: exit 124 (0: check once)")
    parser.add_argument("--interval", type=positive_seconds, default=DEFAULT_INTERVAL_S, metavar="S",
                        help=f"seconds between polls (default {DEFAULT_INTERVAL_S:g})")
    parser.add_argument("--json", action="store_true", help="print the status as JSON once met")
    add_connection_arguments(parser)


def steady_answer(client: ApiClient, status: dict[str, Any]) -> dict[str, Any] | None:
    """The current run's /steady answer; None with no run yet, or a run not yet registered."""
    run = current_run_id(status)
    if run is None:
        return None
    try:
        answer: dict[str, Any] = client.get(f"/api/runs/{quote(run, safe='')}/steady")
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise
    return answer


class Poller:
    """The host's status each poll; tolerates kvwatch being away for UNREACHABLE_GRACE_S."""

    def __init__(self, client: ApiClient, host: str, want: Condition) -> None:
        self.client, self.host, self.want = client, host, want
        self.status = host_status(client, host)  # the first poll must answer: exit 1 or 2 otherwise
        self.steady: dict[str, Any] | None = None
        self.answered_at = time.monotonic()

    def met(self) -> bool:
        if self.want.kind == "steady":
            self.steady = steady_answer(self.client, self.status)
        return met(self.want, self.status, self.steady)

    def refresh(self) -> None:
        try:
            self.status = host_status(self.client, self.host)
            self.answered_at = time.monotonic()
        except Unreachable:
            if time.monotonic() - self.answered_at > UNREACHABLE_GRACE_S:
                raise


def report(client: ApiClient, status: dict[str, Any], as_json: bool) -> None:
    full = with_verdict(status, diagnosis(client, str(status["host"])))
    text = json.dumps(full, indent=2) + "\n" if as_json else render_block(neutralised(full), use_colour(sys.stdout))
    sys.stdout.write(text)


def run(args: argparse.Namespace) -> int:
    client = connect(args)
    deadline = None if args.timeout is None else time.monotonic() + args.timeout
    poller = Poller(client, args.host, args.until)
    while True:
        if poller.met():
            report(client, poller.status, args.json)
            return 0
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            note = progress_note(args.until, poller.status, poller.steady)
            print(f"kvwatch wait: timed out after {args.timeout:g} s waiting for {args.until} ({note})",
                  file=sys.stderr)
            return TIMED_OUT
        time.sleep(args.interval if left is None else min(args.interval, left))
        poller.refresh()
