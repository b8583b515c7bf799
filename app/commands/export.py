"""`kvwatch export --host H [--run ID | --since T --until T] [-o FILE.csv|FILE.parquet]`: a host's stored
series as one long table (the same table as GET /api/export). A comparison of runs exports with
`kvwatch compare --format csv`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kvwatch.app.commands.common import add_store_options, open_for_reading, timestamp
from kvwatch.app.errors import ConfigError
from kvwatch.app.export import FORMATS, NOTHING_STORED, ExportFormat, encode, rollup_rows, series_frame
from kvwatch.app.progress import Progress
from kvwatch.app.report.runs import find_run

NAME = "export"
HELP = "write a host's stored series (a run, a window or all) as CSV or Parquet"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", "-c", type=Path, help="kvwatch.toml (default: ./kvwatch.toml, then XDG)")
    add_store_options(parser)
    parser.add_argument("--host", help="a [[hosts]] name (default: the only host)")
    # dest is not "run": the CLI keeps each command's run() in args.run.
    parser.add_argument("--run", dest="run_id", metavar="ID", help="one run (ids: `kvwatch compare --list`)")
    parser.add_argument("--since", type=timestamp, help="from this time (ISO 8601, UTC if no zone, or epoch s)")
    parser.add_argument("--until", type=timestamp, help="up to this time (same forms)")
    parser.add_argument("--metric", action="append", help="only this metric (repeatable; default: all)")
    parser.add_argument("--rank", default="", help="one rank's series (DP3, GPU0); default: the host's own")
    parser.add_argument("--format", "-f", choices=FORMATS, help="default: from the -o suffix, else csv")
    parser.add_argument("-o", "--output", type=Path, help="the file (default: CSV on stdout)")


def output_format(args: argparse.Namespace) -> ExportFormat:
    if args.format:
        chosen: ExportFormat = args.format
        return chosen
    if args.output is not None and args.output.suffix == ".parquet":
        return "parquet"
    return "csv"


def run(args: argparse.Namespace) -> int:
    fmt = output_format(args)
    if fmt == "parquet" and args.output is None:
        raise ConfigError("--format parquet: give a file with -o (Parquet is binary)")
    if args.run_id and (args.since is not None or args.until is not None):
        raise ConfigError("--run: give a run or a --since/--until window, not both")
    store, host = open_for_reading(args)
    try:
        since, until = args.since, args.until
        if args.run_id:
            chosen = find_run(store, host, args.run_id)
            since, until = chosen.started_at, chosen.ended_at
        metrics = args.metric or store.metrics(host)
        with Progress(f"export {host}", total=len(metrics), unit="series") as progress:
            frame = series_frame(store, host, metrics, args.rank, since, until, lambda _: progress.advance())
    finally:
        store.close()
    if args.run_id and frame.empty:
        raise ConfigError(f"--run {args.run_id}: {NOTHING_STORED}")
    rolled = rollup_rows(frame)
    if rolled:
        print(f"note: {rolled} of {len(frame)} rows are 10 s rollup buckets (source=rollup_10s: value = the"
              " bucket's mean, with its samples, min and max): their raw samples were pruned", file=sys.stderr)
    body = encode(frame, fmt)
    if args.output is None:
        sys.stdout.buffer.write(body)
        sys.stdout.flush()
        return 0
    try:
        args.output.write_bytes(body)
    except OSError as exc:
        raise ConfigError(f"--output: cannot write {args.output}: {exc.strerror}") from None
    print(f"wrote {args.output}: {len(frame)} samples of {len(metrics)} series", file=sys.stderr)
    return 0
