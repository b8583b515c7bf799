"""A host series holds one value per instant: the parts sampled together are combined once.

Seen on the demo: at a restart the GPU chart held eight values at one timestamp (98, 85.75, 73.5,
..., 0: the mean after each GPU's new sample), and the completions series a partial sum per output
file, which a trailing rate reads as a real step."""

from __future__ import annotations

import datetime as dt

from kvwatch.app.pipeline.aggregate import RankAggregator
from kvwatch.app.pipeline.rows import record_rows
from kvwatch.app.store.base import Sample
from kvwatch.parsers import create_parser


def nvidia_smi_tick(when: dt.datetime, util: int, mem: int) -> list[str]:
    """One `-lms` tick of eight GPUs, in nvidia-smi's csv,noheader,nounits shape."""
    stamp = when.strftime("%Y/%m/%d %H:%M:%S.") + f"{when.microsecond // 1000:03d}"
    return [f"{stamp}, {i}, {util}, {mem}, 143771, {120 + 5.8 * util:.2f}, {38 + util // 3}" for i in range(8)]


def host_rows(agg: RankAggregator, lines: list[str], first_line: int) -> list[Sample]:
    parser = create_parser("nvidia-smi")
    samples = [s for n, text in enumerate(lines, first_line) for r in parser.feed(n, text)
               for s in record_rows(r)[0]]
    return agg.host_samples(samples)


def test_eight_gpus_of_one_tick_give_one_host_value_per_metric() -> None:
    agg = RankAggregator()
    start = dt.datetime(2026, 12, 3, 19, 0, 0, 174000)
    host_rows(agg, nvidia_smi_tick(start, 98, 122204), 1)
    # The server went down: every GPU reads idle at the next tick.
    out = host_rows(agg, nvidia_smi_tick(start + dt.timedelta(seconds=1), 0, 1), 9)
    util = [s for s in out if s.metric == "gpu_util_pct"]
    mem = [s for s in out if s.metric == "gpu_mem_used_mib"]
    assert [s.v for s in util] == [0.0] and [s.v for s in mem] == [1.0]
    assert len({(s.metric, s.t) for s in out}) == len(out)  # no metric twice at one instant


def test_output_files_counted_in_one_pass_give_one_sum() -> None:
    agg = RankAggregator()
    files = ("prepared/B2/raw_responses.jsonl", "prepared/B6/raw_responses.jsonl")
    agg.host_samples([Sample("completions", files[0], 10.0, 3500.0), Sample("completions", files[1], 10.0, 0.0)])
    out = agg.host_samples([Sample("completions", files[0], 11.0, 3500.0), Sample("completions", files[1], 11.0, 7.0)])
    assert [(s.t, s.v) for s in out if s.metric == "completions"] == [(11.0, 3507.0)]


def test_parts_at_different_instants_each_give_a_host_value() -> None:
    agg = RankAggregator()
    out = agg.host_samples([Sample("running_req", "DP0", 1.0, 10.0), Sample("running_req", "DP1", 1.0, 20.0),
                            Sample("running_req", "DP0", 2.0, 12.0)])
    assert [(s.t, s.v) for s in out if s.metric == "running_req"] == [(1.0, 30.0), (2.0, 32.0)]
