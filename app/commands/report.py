"""`kvwatch report --host H [--run ID | --since T --until T] -o report.html`: a one-page, self-contained
run report: charts, summary, events, the run's flags and the comparison of the host's runs."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from kvwatch.app.campaign.service import stored_campaigns, view
from kvwatch.app.commands.common import add_store_options, chosen_database, open_for_reading, timestamp
from kvwatch.app.commands.serve import resolve_config
from kvwatch.app.compare.settings import min_steady_by_host
from kvwatch.app.errors import ConfigError
from kvwatch.app.export import NOTHING_STORED
from kvwatch.app.report import ReportData, Window, gather, render_html
from kvwatch.app.report.events import summarize_runs
from kvwatch.app.report.runs import find_run, host_comparison, run_facts
from kvwatch.app.runs import Run, list_runs
from kvwatch.app.store import Store

NAME = "report"
HELP = "write a one-page HTML report of a host's run (charts, summary, events) that opens offline"
log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", "-c", type=Path, help="kvwatch.toml (default: ./kvwatch.toml, then XDG)")
    add_store_options(parser)
    parser.add_argument("--host", help="a [[hosts]] name (default: the only host)")
    # dest is not "run": the CLI keeps each command's run() in args.run.
    parser.add_argument(
        "--run", dest="run_id", metavar="ID", help="one run of the host (ids: `kvwatch compare --host H --list`)"
    )
    parser.add_argument("--baseline", help="run id the comparison measures changes against (default: the first)")
    parser.add_argument("--no-compare", action="store_true", help="leave out the comparison of the host's runs")
    parser.add_argument("--since", type=timestamp, help="from this time (ISO 8601, UTC if no zone, or epoch s)")
    parser.add_argument("--until", type=timestamp, help="up to this time (same forms)")
    parser.add_argument("-o", "--output", type=Path, help="the HTML file (default: kvwatch-report-HOST.html)")


def run(args: argparse.Namespace) -> int:
    if args.run_id and (args.since is not None or args.until is not None):
        raise ConfigError("--run: give a run or a --since/--until window, not both")
    store, host = open_for_reading(args)
    try:
        data = _gather(store, host, args)
    finally:
        store.close()
    if data.empty and args.run_id:
        raise ConfigError(f"--run {args.run_id}: {NOTHING_STORED}")
    if data.empty:
        log.warning("%s: no samples in this window (neither raw samples nor rollups); the report says so", host)
    if data.rollup_points:
        log.warning("%s: raw samples of part of this window were pruned; %d points come from 10 s rollup "
                    "buckets (the report says which)", host, sum(data.rollup_points.values()))
    output: Path = args.output or Path(f"kvwatch-report-{host}{'-' + args.run_id if args.run_id else ''}.html")
    try:
        output.write_text(render_html(data), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--output: cannot write {output}: {exc.strerror}") from None
    log.info("wrote %s (%.1f MB)", output, output.stat().st_size / 1e6)
    return 0


def _overlaps(run: Run, window: Window) -> bool:
    return ((window.until is None or run.started_at <= window.until)
            and (window.since is None or run.ended_at is None or run.ended_at > window.since))


def _gather(store: Store, host: str, args: argparse.Namespace) -> ReportData:
    facts = {}
    if args.run_id:
        chosen = find_run(store, host, args.run_id)
        window = Window(since=chosen.started_at, until=chosen.ended_at, label=f"run {chosen.id}")
        facts = run_facts(chosen)
    elif args.since is not None or args.until is not None:
        window = Window(since=args.since, until=args.until, label="window")
    else:
        window = Window()
    data = gather(store, host, window)
    data.facts = facts
    runs = list_runs(store, host)
    data.run_starts = [(r.started_at, r.id) for r in runs if window.contains(r.started_at)]
    data.runs = summarize_runs([r for r in runs if _overlaps(r, window)], data.events)
    data.campaigns = [view(c) for c in stored_campaigns(store, host)]
    if not args.no_compare:
        # the host's one steady minimum: the config's when the store is the config's, else as recorded
        config = resolve_config(args.config) if chosen_database(args) is None else None
        minimum = min_steady_by_host(store, [host], config)[host]
        data.comparison = host_comparison(store, host, args.baseline, minimum)
    return data
