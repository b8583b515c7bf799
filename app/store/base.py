"""The store contract.

`commit` writes one batch — samples, events and the resume state of the file they came from — in
ONE transaction: after a crash either all of a batch is there, offset included, or none of it is,
so restarting from the stored offset neither loses nor duplicates a line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt


class Sample(NamedTuple):
    metric: str
    rank: str  # "" for the host's own (aggregated) series, "DP3" or "GPU0" for one part
    t: float  # epoch seconds, from the log's timestamp where it has one
    v: float


class EventRow(NamedTuple):
    kind: str
    t: float
    line: int
    data: dict[str, Any]


@dataclass(slots=True)
class Batch:
    host: str
    source: str  # "server_log", "client_log", "outputs", "gpu", ...
    path: str
    samples: list[Sample] = field(default_factory=list)
    events: list[EventRow] = field(default_factory=list)
    state: dict[str, Any] | None = None  # the tail's resume state after the last line of this batch
    # A bulk batch's series as arrays (app/store/chunks.py SeriesColumns), stored as one row each.
    columns: list[Any] = field(default_factory=list)


class Store(Protocol):
    def commit(self, batch: Batch) -> None: ...

    def load_state(self, host: str, source: str, path: str) -> dict[str, Any] | None: ...

    def series(
        self, host: str, metric: str, rank: str = "", since: float | None = None, until: float | None = None
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...

    def events(
        self, host: str | None = None, kinds: tuple[str, ...] = (),
        since: float | None = None, limit: int = 1000,
    ) -> list[dict[str, Any]]: ...

    def metrics(self, host: str) -> list[str]: ...

    # {"state": "ok"}, or {"state": "unreachable", "since": epoch s, "held_batches": n} while batches
    # wait for a database that is gone (PostgreSQL); answered without asking the database.
    def health(self) -> dict[str, Any]: ...

    # Rollups: every sample also lands in fixed-width buckets (ROLLUP_WIDTHS) keeping each bucket's
    # min and max with their times, so a month-wide window reads thousands of rows, not millions.
    def rollup(
        self, host: str, metric: str, width: int, rank: str = "",
        since: float | None = None, until: float | None = None,
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...

    # The same buckets whole: start, samples, sum, min, max; for statistics and exports of pruned windows.
    def buckets(
        self, host: str, metric: str, width: int, rank: str = "",
        since: float | None = None, until: float | None = None,
    ) -> npt.NDArray[np.float64]: ...

    def extent(self, host: str, metric: str, rank: str = "") -> tuple[float, float] | None: ...

    def latest(self, host: str, metric: str, rank: str = "") -> tuple[float, float] | None: ...

    def ranks(self, host: str, metric: str) -> list[str]: ...

    # The first raw sample still stored: raw samples older than server.retention_days are pruned
    # (app/pipeline/retention.py); their rollups stay, so old windows still draw at 10 s and coarser.
    def raw_start(self, host: str, metric: str, rank: str = "") -> float | None: ...

    def prune(self, before: float, batch: int = 0) -> int: ...

    def prune_series(self, host: str, metric: str, rank: str, before: float, limit: int = 0) -> int: ...

    def catalog(self, host: str) -> list[tuple[str, str]]: ...

    # Documents: small JSON objects other features keep (runs, alert states, restart audit),
    # addressed by (kind, key) and listed by kind and host in time order.
    def put_document(self, kind: str, key: str, host: str, t: float, data: dict[str, Any]) -> None: ...

    def swap_document(
        self, kind: str, key: str, host: str, t: float, data: dict[str, Any],
        expect: dict[str, Any] | None, expect_t: float | None = None,
    ) -> bool: ...

    def documents(self, kind: str, host: str | None = None) -> list[dict[str, Any]]: ...

    def delete_documents(self, kind: str, keys: list[str]) -> int:
        """Remove these documents of `kind`; how many there were."""
        ...

    def close(self) -> None: ...
