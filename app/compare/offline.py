"""Log files straight into a throwaway store, through the same parser and rows as the live pipeline,
so `kvwatch compare LOG_A LOG_B` gives the numbers the dashboard would have given."""

from __future__ import annotations

from pathlib import Path

from kvwatch.app.errors import KvwatchError
from kvwatch.app.pipeline.rows import RankAggregator, record_rows
from kvwatch.app.store.base import Batch
from kvwatch.app.store.sqlite import SqliteStore
from kvwatch.parsers import PARSERS, create_parser

BATCH_LINES = 5000


def _commit(
    store: SqliteStore, host: str, path: str, records: list[dict[str, object]], aggregator: RankAggregator
) -> None:
    batch = Batch(host, "server_log", path)
    for record in records:
        samples, events = record_rows(record)
        batch.samples.extend(samples)
        batch.samples.extend(aggregator.host_samples(samples))
        batch.events.extend(events)
    store.commit(batch)


def load_log(store: SqliteStore, host: str, path: Path) -> None:
    """Parse one server log as the server log of `host`."""
    parser = create_parser("auto" if "auto" in PARSERS else "sglang")
    aggregator = RankAggregator()
    pending: list[dict[str, object]] = []
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            for line_no, text in enumerate(handle, start=1):
                pending.extend(parser.feed(line_no, text.rstrip("\r\n")))
                if len(pending) >= BATCH_LINES:
                    _commit(store, host, str(path), pending, aggregator)
                    pending = []
    except OSError as exc:
        raise KvwatchError(f"{path}: cannot read the log: {exc.strerror or exc}") from None
    pending.extend(parser.flush())
    _commit(store, host, str(path), pending, aggregator)


def load_logs(paths: list[Path]) -> tuple[SqliteStore, list[str]]:
    """An in-memory store with each log as one host (named after the file); returns the host names."""
    store = SqliteStore(":memory:")
    hosts: list[str] = []
    for path in paths:
        host = path.stem
        while host in hosts:
            host += "_"
        load_log(store, host, path)
        hosts.append(host)
    return store, hosts
