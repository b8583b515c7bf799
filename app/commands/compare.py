"""`kvwatch compare`: the comparison table from the store, or straight from server logs after the fact.

kvwatch compare LOG_A LOG_B [--baseline ID]          # parse the logs offline; every run in them
kvwatch compare --config kvwatch.toml --runs ID,ID   # runs already collected
kvwatch compare --db kvwatch.db --host gpu1 --list      # or --workdir DIR of a demo
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

from kvwatch.app.api.host_status import defining_flags
from kvwatch.app.commands.common import DEMO_DATABASE, open_named_store
from kvwatch.app.compare import DEFAULT_MIN_STEADY_S, compare_runs, parse_window, render
from kvwatch.app.compare.settings import min_steady_by_host
from kvwatch.app.config import Config, load_config
from kvwatch.app.errors import KvwatchError, UnknownRun
from kvwatch.app.report.events import newest_schema
from kvwatch.app.runner import database_path
from kvwatch.app.runs import RUN_DOC, Run, find_runs, list_runs
from kvwatch.app.store import Store, open_store
from kvwatch.app.terminal.render import flag_words
from kvwatch.app.terminal.safe import neutral_text

NAME = "compare"
HELP = "compare runs on their steady state (from the store, or straight from server log files)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("logs", nargs="*", type=Path, metavar="LOG", help="server logs to parse offline")
    parser.add_argument("--config", "-c", type=Path, help="kvwatch.toml whose store to read")
    parser.add_argument("--database", "--db", dest="database", metavar="DB",
                        help="SQLite path or postgresql:// URL (instead of --config)")
    parser.add_argument("--workdir", type=Path, metavar="DIR",
                        help=f"a `kvwatch demo --workdir` directory: read its {DEMO_DATABASE}")
    parser.add_argument("--host", help="the host whose runs to compare (default: every host)")
    parser.add_argument("--runs", help="run ids, comma-separated (default: every run found)")
    parser.add_argument("--baseline", help="run id the changes are measured against (default: the first)")
    parser.add_argument(
        "--window",
        action="append",
        default=[],
        metavar="RUN_ID:FROM:TO",
        help="set a run's steady window by hand, in seconds after its start (repeatable)",
    )
    parser.add_argument(
        "--min-steady",
        type=float,
        metavar="SECONDS",
        help="shortest steady window worth a number (default: the host's [hosts.compare] min_steady, from "
        f"--config or as the serving kvwatch recorded it in the store, else {DEFAULT_MIN_STEADY_S:.0f})",
    )
    parser.add_argument("--format", "-f", choices=["markdown", "csv", "json"], default="markdown")
    parser.add_argument("--output", "-o", type=Path, help="write here instead of stdout")
    parser.add_argument("--list", action="store_true", help="list the runs found instead of comparing")


def _open(args: argparse.Namespace) -> tuple[Store, list[str], Config | None]:
    if args.workdir:
        if args.database:
            raise KvwatchError("compare: give --database/--db or --workdir, not both")
        args.database = str(args.workdir.expanduser() / DEMO_DATABASE)
    if args.logs:
        if args.config or args.database:
            raise KvwatchError("compare: give log files or --config/--database, not both")
        from kvwatch.app.compare.offline import load_logs

        return (*load_logs(list(args.logs)), None)
    if args.database:
        store = open_named_store(args.database)
        return store, sorted({d["host"] for d in store.documents(RUN_DOC)}), None
    if args.config:
        config = load_config(args.config)
        return open_store(database_path(config)), [h.name for h in config.hosts], config
    raise KvwatchError("compare: give server log files, or --config FILE or --database DB")


def _runs(store: Store, hosts: list[str], args: argparse.Namespace) -> list[Run]:
    if args.host:
        hosts = [args.host]
    if not hosts:
        raise KvwatchError("compare: no host known in this store; name one with --host")
    if args.runs:
        ids = [i.strip() for i in args.runs.split(",") if i.strip()]
        try:
            return find_runs(store, hosts, ids)
        except UnknownRun as exc:
            raise KvwatchError(f"--runs: {exc} (see --list)") from None
    return [run for host in hosts for run in list_runs(store, host)]


def _utc(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def list_lines(runs: list[Run]) -> str:
    """One tab-separated line a run: id, host, started, ended (or its state while on), defining flags."""
    schema = newest_schema()
    lines = []
    for run in runs:
        ended = _utc(run.ended_at) if run.ended_at is not None else run.state
        if run.state == "failed" and run.ended_at is not None:
            ended += " (failed)"
        flags = flag_words(defining_flags(run.flags, schema))
        lines.append(f"{run.id}\t{run.host}\t{_utc(run.started_at)}\t{ended}\t{flags}\n")
    return "".join(lines)


def run(args: argparse.Namespace) -> int:
    store, hosts, config = _open(args)
    try:
        runs = _runs(store, hosts, args)
        if args.list:
            text = list_lines(runs)
        else:
            windows = dict(parse_window(w) for w in args.window)
            minimums = min_steady_by_host(store, {r.host for r in runs}, config, args.min_steady)
            _, result = compare_runs(store, runs, args.baseline, windows, minimums)
            text = json.dumps(result, indent=2) + "\n" if args.format == "json" else render(result, args.format)
    finally:
        store.close()
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text if args.format == "json" and not args.list else neutral_text(text))
    return 0
