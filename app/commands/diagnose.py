"""`kvwatch diagnose --host H [--url URL] [--run ID] [--json]`: what limits a host's run, asked of a
running kvwatch over HTTP (GET /api/hosts/H/diagnosis).

The URL comes from --url, else KVWATCH_URL, else the config's [server] host and port.
Exit codes: 0 answered, 1 kvwatch unreachable, 2 usage (unknown host or run, no URL to use).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from kvwatch.app.errors import KvwatchError
from kvwatch.app.metrics_catalog.names import GEN_THROUGHPUT, RUNNING_REQ
from kvwatch.app.terminal.client import resolve_url
from kvwatch.app.terminal.safe import neutralised

NAME = "diagnose"
HELP = "what limits a host's run now (KV, client, prefill, ...), with the numbers and what to change"
TIMEOUT_S = 30.0
ANY_ADDRESS = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


class Unreachable(KvwatchError):
    """kvwatch did not answer at the URL."""

    exit_code = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", required=True, help="a [[hosts]] name of the running kvwatch")
    parser.add_argument("--url", help="kvwatch's address (default: $KVWATCH_URL, else the config's [server])")
    parser.add_argument("--config", "-c", type=Path, help="kvwatch.toml whose [server] to ask")
    parser.add_argument("--run", dest="run_id", metavar="ID", help="diagnose this run of the host instead")
    parser.add_argument("--json", action="store_true", help="print the API's JSON answer")


def server_url(url: str | None, config: Path | None) -> str:
    """--url, else KVWATCH_URL, else the config's [server]: the same resolution as `kvwatch status`."""
    return resolve_url(url, os.environ, config)


def fetch(url: str) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as answer:
            data: dict[str, Any] = json.loads(answer.read().decode("utf-8"))
            return data
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")
        with contextlib.suppress(ValueError, AttributeError):  # not kvwatch's JSON: show the text
            detail = str(json.loads(detail).get("detail", detail))
        raise KvwatchError(f"diagnose: {exc.code} from {url}: {detail}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise Unreachable(f"diagnose: kvwatch did not answer at {url}: {reason}") from None


def _predicted(entry: dict[str, Any]) -> str:
    predicted = entry.get("predicted")
    if not predicted:
        return ""
    parts = []
    if predicted.get("max_total_num_tokens") is not None:
        parts.append(f"{predicted['max_total_num_tokens']:,} KV tokens")
    if predicted.get(RUNNING_REQ) is not None:
        parts.append(f"~{predicted[RUNNING_REQ]:.0f} running")
    if predicted.get(GEN_THROUGHPUT) is not None:
        parts.append(f"~{predicted[GEN_THROUGHPUT]:.0f} tok/s")
    risks = "; ".join(r["message"] for r in predicted.get("risks", []))
    return "\n      predicted: " + ", ".join(parts) + (f"\n      risk: {risks}" if risks else "")


def render(host: str, body: dict[str, Any]) -> str:
    window = body.get("window") or {}
    lines = [f"{host}: {body['verdict']}" + (f"  (run {body['run']}, last {window.get('seconds', 0):.0f} s)"
                                              if body.get("run") else "")]
    lines += [f"  - {item['fact']}" for item in body.get("evidence", [])]
    others = [f["verdict"] for f in body.get("findings", [])[1:]]
    if others:
        lines.append(f"  also: {', '.join(others)}")
    if body.get("suggestions"):
        lines.append("suggestions:")
        lines += [f"  - {entry['action']}{_predicted(entry)}" for entry in body["suggestions"]]
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    base = server_url(args.url, args.config)
    query = f"?{urllib.parse.urlencode({'run': args.run_id})}" if args.run_id else ""
    body = fetch(f"{base}/api/hosts/{urllib.parse.quote(args.host, safe='')}/diagnosis{query}")
    sys.stdout.write(json.dumps(body, indent=2) + "\n" if args.json else render(args.host, neutralised(body)))
    return 0
