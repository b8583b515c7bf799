"""A host's `[hosts.compare]` table: `min_steady`, the shortest automatic steady window (default 5 min).

It is the one steady minimum of a host: the page's compare table, `kvwatch compare`, `kvwatch report`,
`kvwatch wait --until steady` and the APIs they call all judge a run's window by it. A short demo
(minutes, not hours) sets a shorter one; the page shows the minimum in force and lets a person change
it for one comparison (`min_steady` on /api/compare), as `--min-steady` does for `kvwatch compare`.

A kvwatch that serves a config records each host's minimum in its store, so that a command reading
the store without that config (`--db`, a demo's `--workdir`) judges runs as the server did.
The table's model is app/config/compare.py's CompareTable, validated with the rest of the config.
"""

from __future__ import annotations

from collections.abc import Iterable

from kvwatch.app.config import Config
from kvwatch.app.config.compare import DEFAULT_MIN_STEADY_S
from kvwatch.app.store.base import Store

SETTINGS_DOC = "compare_settings"  # one document a host: {"min_steady_s": seconds}


def host_min_steady(config: Config, host: str) -> float:
    """The configured minimum for `host`'s runs, or the default."""
    entry = next((h for h in config.hosts if h.name == host), None)
    return DEFAULT_MIN_STEADY_S if entry is None else entry.compare.min_steady


def record_min_steady(store: Store, config: Config, now: float) -> None:
    """Keep each configured host's minimum in the store (at a start and at each reload)."""
    minimums = {host.name: host_min_steady(config, host.name) for host in config.hosts}
    for host, minimum in minimums.items():
        store.put_document(SETTINGS_DOC, host, host, now, {"min_steady_s": minimum})


def stored_min_steady(store: Store, host: str) -> float:
    """The minimum the last kvwatch serving `host` recorded, else the default."""
    for doc in store.documents(SETTINGS_DOC, host):
        value = doc["data"].get("min_steady_s")
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            return float(value)
    return DEFAULT_MIN_STEADY_S


def min_steady_by_host(
    store: Store, hosts: Iterable[str], config: Config | None = None, override: float | None = None
) -> dict[str, float]:
    """Each host's minimum: `override` when given, else the config's, else the one stored."""
    if override is not None:
        return {host: override for host in hosts}
    if config is not None:
        return {host: host_min_steady(config, host) for host in hosts}
    return {host: stored_min_steady(store, host) for host in hosts}
