"""`kvwatch campaign plan|start|status|stop`: a host's tuning campaign, over a running kvwatch's API.

kvwatch campaign plan   [--host H] [--plan FILE.toml]   the ordered plan with predictions; nothing restarts
kvwatch campaign start  [--host H] [--campaign ID]      start the planned campaign (the one `plan` showed)
kvwatch campaign status [--host H] [--wait SECONDS]     where it is; --wait: until it is done or stopped
kvwatch campaign stop   [--host H]
The plan is the host's `[hosts.campaign]`, or --plan (a TOML file of the same keys). plan, start and
stop need the control token (--token, else $KVWATCH_TOKEN), as a restart does.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from kvwatch.app.commands.status import add_connection_arguments
from kvwatch.app.errors import ConfigError, KvwatchError
from kvwatch.app.terminal.client import ApiClient, ApiError, resolve_url
from kvwatch.app.terminal.safe import neutralised

NAME = "campaign"
HELP = "plan, start, watch or stop a tuning campaign on a host of a running kvwatch"
ACTIONS = ("plan", "start", "status", "stop")
POLL_S = 2.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=ACTIONS)
    parser.add_argument("--host", default="demo", help="the host (default: demo)")
    parser.add_argument("--plan", type=Path, help="plan: a TOML file with [hosts.campaign]'s keys")
    parser.add_argument("--campaign", help="start: the planned campaign's id (default: the one planned)")
    parser.add_argument("--wait", type=float, metavar="SECONDS", help="status: wait until it ends, at most this long")
    parser.add_argument("--json", action="store_true", help="print the campaign as JSON")
    parser.add_argument("--token", help="the control token (default: $KVWATCH_TOKEN)")
    add_connection_arguments(parser)


def post(base: str, path: str, body: dict[str, Any] | None, token: str | None) -> dict[str, Any]:
    data = json.dumps(body).encode() if body is not None else b""
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token or ''}"}
    request = urllib.request.Request(base + path, data=data, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            found: dict[str, Any] = json.loads(answer.read())
            return found
    except urllib.error.HTTPError as exc:
        detail = json.loads(exc.read() or b"{}").get("detail", exc.reason)
        raise ApiError(base + path, exc.code, str(detail)) from None
    except (urllib.error.URLError, OSError) as exc:
        raise KvwatchError(f"cannot reach kvwatch at {base}: {exc}") from None


def describe(campaign: dict[str, Any]) -> str:
    """The plan or the campaign in lines: state, each step predicted vs measured, the price sentences."""
    lines = [f"campaign {campaign['id']} on {campaign['host']}: {campaign['state']}"
             + (f" ({campaign['reason']})" if campaign.get("reason") else "")]
    for row in campaign["table"]:
        lines.append(f"  {row['step']}. {row['candidate']}: {row['status']}; KV tokens {row['KV tokens predicted']}"
                     f" predicted, {row['KV tokens measured']} measured ({row['KV error']}); tok/s "
                     f"{row['tok/s predicted']} predicted, {row['tok/s measured']} measured"
                     + (f"; {row['why']}" if row["why"] != "-" else ""))
    if campaign.get("final_flags"):
        flags = " ".join(f"--{k} {v}" for k, v in campaign["final_flags"].items())
        lines.append(f"  the host runs: {flags}")
    lines += [f"  price: {sentence}" for sentence in campaign.get("prices", [])]
    return "\n".join(neutralised(line) for line in lines) + "\n"


def run(args: argparse.Namespace) -> int:
    base = resolve_url(args.url, os.environ, args.config)
    token = args.token or os.environ.get("KVWATCH_TOKEN")
    path = f"/api/campaign/{args.host}"
    if args.action == "plan":
        body = None
        if args.plan is not None:
            try:
                body = tomllib.loads(args.plan.read_text(encoding="utf-8"))
            except (OSError, tomllib.TOMLDecodeError) as exc:
                raise ConfigError(f"--plan {args.plan}: {exc}") from None
        campaign = post(base, path + "/plan", body, token)
    elif args.action == "start":
        campaign = post(base, path + "/start", {"campaign": args.campaign} if args.campaign else None, token)
    elif args.action == "stop":
        campaign = post(base, path + "/stop", None, token)
    else:
        campaign = _status(ApiClient(base), path, args.wait)
    sys.stdout.write(json.dumps(campaign, indent=2) + "\n" if args.json else describe(campaign))
    return 0 if campaign["state"] != "stopped" or args.action == "stop" else 1


def _status(client: ApiClient, path: str, wait: float | None) -> dict[str, Any]:
    deadline = time.monotonic() + (wait or 0.0)
    while True:
        campaign: dict[str, Any] = client.get(path)
        if wait is None or campaign["state"] in ("done", "stopped") or time.monotonic() >= deadline:
            return campaign
        time.sleep(POLL_S)
