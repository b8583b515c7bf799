"""A recorded run in a real store (SQLite, or PostgreSQL by URL), an engine over it and a hand-driven wall clock."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvwatch.app.alerts.engine import AlertEngine, Change
from kvwatch.app.alerts.rules import RuleSpec, rules_for_host
from kvwatch.app.config import Config, HostConfig, ServerConfig, parse_config
from kvwatch.app.store import open_store
from kvwatch.app.store.base import Batch, EventRow, Sample
from kvwatch.collectors.health import HostHealth

T0 = 1_771_937_354.0  # 2026-02-24 12:49:14 UTC, log time
WALL0 = 1_800_000_000.0  # this machine's clock, unrelated to the log's on purpose
HOST = HostConfig(
    name="gpu1",
    ssh="local",
    server_log="/logs/sglang.log",
    client_log="/logs/client.log",
    outputs=("/out/*.jsonl",),
)


class Clock:
    def __init__(self, t: float = WALL0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


def every(start: float, values: Iterable[float], step: float = 5.0) -> list[tuple[float, float]]:
    return [(start + i * step, float(v)) for i, v in enumerate(values)]


@dataclass
class Rig:
    path: Path | str  # a SQLite file, or a postgresql:// URL
    host: HostConfig = HOST
    alerts_table: dict[str, Any] = field(default_factory=dict)
    clock: Clock = field(default_factory=Clock)
    health: HostHealth | None = None
    changes: list[Change] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.store = open_store(str(self.path))
        self.engine = self.new_engine()

    def config(self) -> Config:
        raw: dict[str, Any] = {"hosts": [{"name": self.host.name, "ssh": "local", "server_log": "x"}]}
        if self.alerts_table:
            raw["alerts"] = self.alerts_table
        alerts = parse_config(raw, "kvwatch.toml").alerts
        return Config(server=ServerConfig(), hosts=(self.host,), alerts=alerts, path="kvwatch.toml")

    def rules(self) -> tuple[RuleSpec, ...]:
        return rules_for_host(self.config(), self.host)

    def new_engine(self) -> AlertEngine:
        """A fresh engine on the same store: what a kvwatch restart does."""
        return AlertEngine(
            self.store,
            [self.host],
            {self.host.name: self.rules()},
            clock=self.clock,
            health=lambda _name: self.health,
            on_change=self.changes.append,
        )

    def samples(self, metric: str, points: Iterable[tuple[float, float]], source: str = "server_log") -> None:
        batch = Batch(self.host.name, source, f"/{source}", samples=[Sample(metric, "", t, v) for t, v in points])
        self.store.commit(batch)

    def event(self, t: float, name: str) -> None:
        row = EventRow("event", t, 1, {"event": name, "ts": ""})
        self.store.commit(Batch(self.host.name, "server_log", "/server_log", events=[row]))

    def new_run(self, t: float, flags: dict[str, Any] | None = None) -> None:
        """A server (re)start at log time `t`: its argument dump, then `ready` a second later."""
        args = {"model_path": "m", **(flags or {})}
        dump = EventRow("server_args", t, 1, {"args": args, "ts": ""})
        rows = [dump, EventRow("event", t + 1, 2, {"event": "ready"})]
        self.store.commit(Batch(self.host.name, "server_log", "/server_log", events=rows))

    def play(self, metric: str, points: list[tuple[float, float]], wall_step: float = 1.0) -> None:
        """Commit one sample at a time and evaluate after each, as live collection would."""
        for point in points:
            self.samples(metric, [point])
            self.clock.advance(wall_step)
            self.engine.evaluate()

    def play_lines(self, start: float, lines: list[dict[str, float]], step: float = 5.0) -> None:
        """Decode lines: several metrics logged together, one line at a time."""
        for i, line in enumerate(lines):
            t = start + i * step
            samples = [Sample(metric, "", t, v) for metric, v in line.items()]
            self.store.commit(Batch(self.host.name, "server_log", "/server_log", samples=samples))
            self.clock.advance(1.0)
            self.engine.evaluate()

    def of(self, rule: str) -> list[str]:
        """The states `rule` went through, in order."""
        return [c.alert.state for c in self.changes if c.alert.rule == rule]

    def state(self, rule: str) -> str:
        alert = self.alert(rule)
        return "inactive" if alert is None else str(alert["state"])

    def alert(self, rule: str) -> dict[str, Any] | None:
        shown = [a for a in self.engine.snapshot(retention_s=float("inf")) if a["rule"] == rule]
        return shown[0] if shown else None
