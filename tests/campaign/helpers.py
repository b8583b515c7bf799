"""A campaign driven on a real `kvwatch demo` (tests/simulator/test_demo_wheel.py's), read back from its API."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kvwatch.simulator import campaign as seed
from kvwatch.simulator import capacity
from tests.simulator.test_demo_wheel import RunningDemo

DONE_WITHIN_S = 900.0  # the bound: a campaign completes within 15 minutes at the demo's speed
HICACHE_088 = seed.BY_PRESET["hicache-0.88"].flag_map


def tokens_at(fraction: float) -> int:
    return capacity.kv_capacity(capacity.KIMI_K25, fraction).max_total_num_tokens


def steps(campaign: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {step["candidate"]["name"]: step for step in campaign["steps"]}


def wait_until_over(running: RunningDemo, timeout: float = DONE_WITHIN_S) -> dict[str, Any]:
    over: dict[str, Any] = running.until(
        lambda: (lambda c: c if c["state"] in ("done", "stopped") else None)(running.get("/api/campaign/demo")),
        "the campaign to end", timeout=timeout)
    return over


def sized_run(running: RunningDemo, host: str = "demo") -> dict[str, Any]:
    """Wait until the host's current run shows its KV pool and capacity, as the page's runs list does:
    a plan's predictions rest on those two startup lines (on a loaded machine they can be stored a few
    seconds after the ready line shows in the log)."""
    seen: list[Any] = []

    def sized() -> dict[str, Any] | None:
        seen[:] = running.get(f"/api/runs?host={host}")
        capacity = (seen[-1].get("capacity") or {}) if seen else {}
        return seen[-1] if capacity.get("max_total_num_tokens") and capacity.get("kv_cache") else None

    try:
        found: dict[str, Any] = running.until(sized, "the current run's KV pool and capacity", timeout=60)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\nruns: {seen}") from None
    return found


def runs_with(flags: dict[str, object], found: dict[str, Any]) -> bool:
    """The host's flags hold every flag of `flags` (a preset) with its value."""
    return all(found.get(name) == value for name, value in flags.items())


def capacities(log: Path) -> list[int]:
    return [int(m) for m in re.findall(r"max_total_num_tokens=(\d+)", log.read_text(errors="replace"))]
