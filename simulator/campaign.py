"""The tuning campaign of the run kvwatch serves, declared once: each config's flags and what the run
measured with it. The simulator plays these numbers; the presets' descriptions, the demo's story
(simulator/demo.py) and the README's story table are made from them (tests/simulator/test_campaign.py
holds the README to this file)."""

from __future__ import annotations

from dataclasses import dataclass

Range = tuple[float, float]


@dataclass(frozen=True, slots=True)
class Config:
    """One config of the campaign: the preset's flags (name without dashes -> value, True = a switch)
    and the run's measured figures, a point figure as a range of one value."""

    preset: str
    flags: tuple[tuple[str, object], ...]
    kv_tokens: int | None  # max_total_num_tokens; None: the server never starts
    running: Range | None = None  # concurrent decode requests
    usage: Range | None = None  # token usage; None: not measured
    queue: Range | None = None
    gen_tps: Range | None = None  # generation throughput, tokens/s
    fails: str | None = None  # why the server does not start
    vetoed: bool = False

    @property
    def flag_map(self) -> dict[str, object]:
        return dict(self.flags)

    def description(self) -> str:
        """The preset's description as the page shows it: the measured figures, in the run's words."""
        if self.fails is not None:
            return self.fails
        parts = [f"{_thousands(self.kv_tokens or 0)} KV tokens"]
        parts += [f"{_span(self.running)} concurrent decode reqs"] if self.running else []
        parts += [f"usage {_span(self.usage, '.2f')}"] if self.usage else []
        parts += [("no queue" if self.queue[1] == 0 else f"queue {_span(self.queue)}")] if self.queue else []
        parts += [f"{_span(self.gen_tps, ',.0f')} tok/s"] if self.gen_tps else []
        return "measured: " + ", ".join(parts) + (" (vetoed)" if self.vetoed else "")


def _thousands(tokens: int) -> str:
    return f"{round(tokens / 1000)}K"


def _span(value: Range, fmt: str = ".0f") -> str:
    low, high = value
    return f"~{low:{fmt}}" if low == high else f"{low:{fmt}}-{high:{fmt}}"


HICACHE: tuple[tuple[str, object], ...] = (("enable-hierarchical-cache", True), ("hicache-size", 48))
CAMPAIGN: tuple[Config, ...] = (
    Config("default", (("mem-fraction-static", 0.85),), 116_000, running=(35, 50), gen_tps=(600, 850)),
    Config("hicache-0.88", (("mem-fraction-static", 0.88), *HICACHE), 159_000, running=(72, 72),
           usage=(0.96, 0.96), queue=(79, 79), gen_tps=(930, 930)),
    Config("fp8-0.90", (("mem-fraction-static", 0.90), ("kv-cache-dtype", "fp8_e4m3"), *HICACHE), 376_000,
           running=(150, 150), usage=(0.61, 0.63), queue=(0, 0), gen_tps=(1300, 1450), vetoed=True),
    Config("hicache-0.93", (("mem-fraction-static", 0.93), *HICACHE), None,
           fails="runs out of memory at start (CUDA graph capture)"),
)
BY_PRESET: dict[str, Config] = {config.preset: config for config in CAMPAIGN}
PRESETS: dict[str, dict[str, object]] = {config.preset: config.flag_map for config in CAMPAIGN}
PRESET_DESCRIPTIONS: dict[str, str] = {config.preset: config.description() for config in CAMPAIGN}
POINT_TOLERANCE = 0.10  # a point figure of the run (72 running) is met within 10 %


def within(measured: float, expected: Range) -> bool:
    """`measured` inside the run's range, a point figure widened by POINT_TOLERANCE."""
    low, high = expected
    if low == high:
        return abs(measured - low) <= POINT_TOLERANCE * max(abs(low), 1.0)
    return low <= measured <= high
