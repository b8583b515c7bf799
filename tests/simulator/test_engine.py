"""The scheduler model: saturation where the run saturated, none where it did not, determinism."""

from __future__ import annotations

import io
import random
import statistics

import pytest

from kvwatch.parsers import create_parser
from kvwatch.simulator import campaign, demo
from kvwatch.simulator.clock import SimClock
from kvwatch.simulator.engine import Engine, EngineConfig, Request
from kvwatch.simulator.logwriter import LogWriter
from kvwatch.simulator.workload import DATASETS, sample_lengths

B2 = DATASETS[1]


def run_closed_loop(preset: str, concurrency: int = 150, horizon: float = 900.0, seed: int = 1) -> str:
    """Keep `concurrency` B2 requests in flight for `horizon` simulated seconds; returns the log."""
    spec = demo.spec_for(preset, port=30000)
    out = io.StringIO()
    log = LogWriter(out, spec.fmt, SimClock(wall_start=1_771_937_354.0), tp_size=8, pace=False)
    engine = Engine(EngineConfig(max_total_num_tokens=spec.capacity().max_total_num_tokens, seed=seed), log)
    rng = random.Random(seed)
    counter = iter(range(10**9))

    def submit(_done: Request | None = None) -> None:
        prompt, response = sample_lengths(rng, B2)
        engine.submit(Request(rid=str(next(counter)), prompt_tokens=prompt, output_tokens=response,
                              max_new_tokens=B2.max_new_tokens, prefix_key="B2", prefix_tokens=180,
                              on_done=submit))

    for _ in range(concurrency):
        submit()
    engine.advance_to(horizon)
    return out.getvalue()


def steady_decodes(text: str) -> list[dict[str, object]]:
    parser = create_parser("sglang")
    records = [r for i, line in enumerate(text.splitlines(), 1) for r in parser.feed(i, line)]
    decodes = [r for r in records if r["kind"] == "decode"]
    return decodes[len(decodes) // 3:]  # warm-up excluded, as the dashboard does


def median(rows: list[dict[str, object]], key: str) -> float:
    return float(statistics.median(float(str(r[key])) for r in rows))


@pytest.fixture(scope="module")
def saturated() -> list[dict[str, object]]:
    return steady_decodes(run_closed_loop("hicache-0.88"))


def test_hicache_088_saturates_like_the_measured_run(saturated: list[dict[str, object]]) -> None:
    # measured: 72 running, usage 0.96, queue 79, 930 tok/s (600-1300)
    assert median(saturated, "token_usage") >= 0.95
    assert 55 <= median(saturated, "running_req") <= 95
    assert median(saturated, "queue_req") >= 40
    assert 600 <= median(saturated, "gen_throughput") <= 1300


FIELDS = (("running_req", "running"), ("token_usage", "usage"), ("queue_req", "queue"),
          ("gen_throughput", "gen_tps"))


@pytest.mark.parametrize(("preset", "horizon"), [("default", 120.0), ("hicache-0.88", 300.0), ("fp8-0.90", 480.0)])
def test_each_story_run_settles_on_its_declared_numbers_within_its_length(preset: str, horizon: float) -> None:
    # the demo's story runs each config this long from a cold start; its second half is what it shows
    text = run_closed_loop(preset, horizon=horizon)
    parser = create_parser("sglang")
    decodes = [r for i, line in enumerate(text.splitlines(), 1) for r in parser.feed(i, line) if r["kind"] == "decode"]
    second_half = decodes[len(decodes) // 2:]
    config = campaign.BY_PRESET[preset]
    misses = [(name, median(second_half, key), config.plays(name)) for key, name in FIELDS
              if config.plays(name) is not None
              and not campaign.within(median(second_half, key), config.plays(name))]  # type: ignore[arg-type]
    assert misses == []


def test_fp8_run_has_room_and_no_queue() -> None:
    rows = steady_decodes(run_closed_loop("fp8-0.90"))
    # measured: 150 running, usage 0.61-0.63, queue 0, 1300-1450 tok/s
    assert median(rows, "running_req") == 150
    assert median(rows, "queue_req") == 0
    assert median(rows, "token_usage") < 0.9
    assert 1300 <= median(rows, "gen_throughput") <= 1450


def test_saturation_retracts_requests() -> None:
    assert "KV cache pool is full. Retract requests." in run_closed_loop("default", horizon=600)


def test_throughput_grows_with_concurrency_and_saturates() -> None:
    rates = [median(steady_decodes(run_closed_loop("fp8-0.90", c, horizon=300)), "gen_throughput")
             for c in (10, 40, 150)]
    assert rates[0] < rates[1] < rates[2]
    assert rates[2] / rates[1] < 150 / 40  # sub-linear: the step time grows with the batch


def test_start_is_a_burst() -> None:
    # with room for all 150, each prefill batch at the start is as full as the prefill budget allows
    text = run_closed_loop("fp8-0.90", horizon=30)
    first = [line for line in text.splitlines() if "Prefill batch" in line][:3]
    new_tokens = [int(line.split("#new-token: ")[1].split(",")[0]) for line in first]
    assert all(n >= 0.9 * EngineConfig(max_total_num_tokens=1).max_prefill_tokens for n in new_tokens), first
    assert sum(int(line.split("#new-seq: ")[1].split(",")[0]) for line in first) >= 30


def test_same_seed_same_log() -> None:
    assert run_closed_loop("default", horizon=200, seed=7) == run_closed_loop("default", horizon=200, seed=7)
    assert run_closed_loop("default", horizon=200, seed=7) != run_closed_loop("default", horizon=200, seed=8)
