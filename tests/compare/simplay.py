"""Play one config on the simulator's engine, faster than real time, and measure the truth on the
engine itself (not on its log): its state read every simulated second, its token and request counters.

The log is what kvwatch sees; the truth is what the simulated server actually did, read from the
engine every simulated second, so it can be taken over any window.
"""

from __future__ import annotations

import io
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kvwatch.simulator import startup
from kvwatch.simulator.clock import SimClock
from kvwatch.simulator.engine import Engine, EngineConfig, Request
from kvwatch.simulator.logwriter import LogWriter
from kvwatch.simulator.spec import ServerSpec
from kvwatch.simulator.workload import DATASETS, Dataset, sample_lengths

MODEL = "/models/Kimi-K2.5"
# Long responses, short prompts: a run takes many minutes to settle after its start burst, which is what
# the steady-window tests need to see cut (the demo's B2 is fitted to settle within a minute instead).
SLOW_SETTLING = Dataset("B2_opencodeinstruct", 3500, 520, 2300)
CLIENT_CONCURRENCY = 150
# The three configs of the-run-it-serves.md.
STORY_SPECS = (
    ServerSpec(model_path=MODEL, tp_size=8, mem_fraction_static=0.85),
    ServerSpec(model_path=MODEL, tp_size=8, mem_fraction_static=0.88, enable_hierarchical_cache=True, hicache_size=48),
    ServerSpec(
        model_path=MODEL,
        tp_size=8,
        mem_fraction_static=0.90,
        kv_cache_dtype="fp8_e4m3",
        enable_hierarchical_cache=True,
        hicache_size=48,
    ),
)


@dataclass
class Played:
    start_epoch: float
    end_epoch: float
    burst_done_epoch: float  # when as many requests as the start burst have finished (one turnover)
    state: np.ndarray  # one row a simulated second: epoch, running, queue, usage, tokens, completions

    def truth(self, start: float, end: float) -> dict[str, float]:
        """What the engine did between two epochs: median levels, mean rates."""
        rows = self.state[(self.state[:, 0] >= start) & (self.state[:, 0] < end)]
        span = rows[-1, 0] - rows[0, 0]
        running, queue, usage = np.median(rows[:, 1:4], axis=0)
        return {
            "running_req": float(running),
            "queue_req": float(queue),
            "token_usage": float(usage),
            "gen_throughput": float(rows[-1, 4] - rows[0, 4]) / span,
            "completion_rate": float(rows[-1, 5] - rows[0, 5]) / span,
        }


class _Client:
    """Keeps CLIENT_CONCURRENCY requests in flight (closed loop), like the run's client."""

    def __init__(self, engine: Engine, seed: int, dataset: Dataset) -> None:
        self.engine, self.rng, self.dataset, self.n = engine, random.Random(seed), dataset, 0

    def submit(self, _: Request | None = None) -> None:
        prompt, response = sample_lengths(self.rng, self.dataset)
        self.n += 1
        self.engine.submit(
            Request(
                rid=f"r{self.n}",
                prompt_tokens=prompt,
                output_tokens=response,
                max_new_tokens=self.dataset.max_new_tokens,
                prefix_key=self.dataset.name,
                prefix_tokens=self.dataset.system_prompt_tokens,
                on_done=self.submit,
            )
        )


def play(spec: ServerSpec, out: io.TextIOBase, epoch0: float, duration_s: float, seed: int,
         dataset: Dataset = DATASETS[1]) -> Played:
    clock = SimClock(speed=1.0, wall_start=epoch0)
    log = LogWriter(out, spec.fmt, clock, tp_size=spec.tp_size, pace=False)  # type: ignore[arg-type]
    t = startup.write_ready(log, spec, startup.write_capacity(log, spec, startup.write_boot(log, spec)), 4242)
    engine = Engine(
        EngineConfig(
            max_total_num_tokens=spec.capacity().max_total_num_tokens,
            max_running_requests=spec.max_running(),
            seed=seed,
        ),
        log,
    )
    engine.t = t
    client = _Client(engine, seed + 1, dataset)
    for _ in range(CLIENT_CONCURRENCY):
        client.submit()
    rows = []
    burst_done = None
    for second in np.arange(t + 1.0, t + duration_s, 1.0):
        engine.advance_to(float(second))
        if burst_done is None and engine.stats.num_requests_total >= CLIENT_CONCURRENCY:
            burst_done = clock.epoch(engine.t)
        rows.append(
            (
                clock.epoch(engine.t),
                len(engine.running),
                len(engine.waiting),
                engine.token_usage,
                engine.stats.generation_tokens_total,
                engine.stats.num_requests_total,
            )
        )
    assert burst_done is not None, "the run is shorter than its start burst"
    return Played(epoch0, clock.epoch(engine.t), burst_done, np.asarray(rows, dtype=np.float64))


def play_campaign(path: Path, specs: tuple[ServerSpec, ...], duration_s: float, seed: int = 0,
                  dataset: Dataset = DATASETS[1]) -> list[Played]:
    """The configs one after another in one server log, a minute apart (restarts)."""
    played = []
    epoch = 1_771_934_400.0  # 2026-02-24 12:00:00 UTC
    with path.open("w", encoding="utf-8") as out:
        for i, spec in enumerate(specs):
            played.append(play(spec, out, epoch, duration_s, seed + 10 * i, dataset))
            epoch = played[-1].end_epoch + 60.0
    return played
