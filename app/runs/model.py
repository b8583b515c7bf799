"""A run: one server start with its flags and capacity, from `started_at` to `ended_at` (None: still on)."""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

RunSource = Literal["log", "controller"]
RunState = Literal["starting", "running", "ended", "failed"]
# Not flags in the sense of a config choice: they differ between any two launches or name the machine.
NOT_CONFIG = frozenset({"host", "port", "random_seed", "nccl_port", "dist_init_addr", "log_level"})


def flag_name(key: str) -> str:
    """`mem_fraction_static` (ServerArgs field) and `--mem-fraction-static` both -> `mem-fraction-static`."""
    return key.strip().lstrip("-").replace("_", "-")


def normalize_flags(args: dict[str, Any]) -> dict[str, Any]:
    return {flag_name(k): v for k, v in args.items() if k.replace("-", "_").lstrip("_") not in NOT_CONFIG}


def run_id(host: str, started_at: float, taken: set[str] | frozenset[str] = frozenset()) -> str:
    """Readable and stable: `gpu1-20260224T124914`; no comma or colon, so lists of ids stay parseable."""
    stamp = dt.datetime.fromtimestamp(started_at, dt.UTC).strftime("%Y%m%dT%H%M%S")
    base = f"{host}-{stamp}"
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}-{n}", n + 1
    return candidate


@dataclass(slots=True)
class Run:
    id: str
    host: str
    started_at: float
    flags: dict[str, Any] = field(default_factory=dict)
    capacity: dict[str, Any] = field(default_factory=dict)
    ended_at: float | None = None
    ready_at: float | None = None
    failed_at: float | None = None
    source: RunSource = "log"
    log_path: str | None = None
    requested_flags: dict[str, Any] | None = None  # what the controller asked for, when it started the run

    @property
    def state(self) -> RunState:
        if self.failed_at is not None:
            return "failed"
        if self.ended_at is not None:
            return "ended"
        return "running" if self.ready_at is not None else "starting"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "state": self.state}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Run:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)
