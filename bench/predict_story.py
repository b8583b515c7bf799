"""Prediction error on the three measured configs of the-run-it-serves.md.

Each config is played by the simulator's engine (tests/compare/simplay.py: 150 requests kept in
flight, the B2 workload) into its own server log; from each run, `predict` is asked for the other two
configs' flags, and its KV tokens, running requests and throughput are set against (a) the story's
measured numbers and (b) what the simulated run of that config measured (steady-state medians).

Two histories: `host` = all three runs stored for one host (the throughput curve and the GPU memory
come from all of them, as on a host that has run the campaign); `alone` = only the source run stored,
plus nvidia-smi's memory.total (a first prediction: one concurrency level measured, throughput held flat).
Run: `python bench/predict_story.py [--duration 1800]`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from tempfile import TemporaryDirectory

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kvwatch.app.compare import compute_run_stats
from kvwatch.app.compare.offline import load_log
from kvwatch.app.config import HostConfig
from kvwatch.app.diagnosis import predict_host
from kvwatch.app.runs import list_runs
from kvwatch.app.store.base import Batch, Sample
from kvwatch.app.store.sqlite import SqliteStore
from kvwatch.simulator.capacity import GpuSpec
from tests.compare.simplay import STORY_SPECS, play

NAMES = ("0.85", "0.88+hicache", "0.90+fp8+hicache")
FLAGS = (
    {"mem-fraction-static": 0.85, "kv-cache-dtype": "auto", "enable-hierarchical-cache": False, "hicache-size": 0},
    {"mem-fraction-static": 0.88, "kv-cache-dtype": "auto", "enable-hierarchical-cache": True, "hicache-size": 48},
    {"mem-fraction-static": 0.90, "kv-cache-dtype": "fp8_e4m3", "enable-hierarchical-cache": True, "hicache-size": 48},
)
STORY = (  # the-run-it-serves.md: tokens, running (range midpoint), gen tok/s (range midpoint)
    {"max_total_num_tokens": 116_000, "running_req": 42.5, "gen_throughput": 725.0},
    {"max_total_num_tokens": 159_000, "running_req": 72.0, "gen_throughput": 930.0},
    {"max_total_num_tokens": 376_000, "running_req": 150.0, "gen_throughput": 1375.0},
)
METRICS = ("max_total_num_tokens", "running_req", "gen_throughput")


def write_runs(folder: Path, duration: float) -> list[Path]:
    paths, epoch = [], 1_771_934_400.0
    for i, spec in enumerate(STORY_SPECS):
        path = folder / f"run{i}.log"
        with path.open("w", encoding="utf-8") as out:
            played = play(spec, out, epoch, duration, seed=10 * i)
        epoch = played.end_epoch + 60.0
        paths.append(path)
    return paths


def store_of(paths: list[Path]) -> SqliteStore:
    store = SqliteStore(":memory:")
    for path in paths:
        load_log(store, "gpu1", path)
    batch = Batch("gpu1", "gpu", "nvidia-smi")
    batch.samples.append(Sample("gpu_mem_total_mib", "GPU0", 1_771_934_400.0, round(GpuSpec().total_gib * 1024)))
    store.commit(batch)
    return store


def simulated_truth(store: SqliteStore) -> list[dict[str, float]]:
    out = []
    for run in list_runs(store, "gpu1"):
        stats = compute_run_stats(store, run)
        out.append({"max_total_num_tokens": float(run.capacity["max_total_num_tokens"]),
                    **{m: stats.levels[m].value for m in ("running_req", "gen_throughput")}})
    return out


def error(predicted: object, measured: float) -> str:
    return f"{(float(predicted) / measured - 1) * 100:+.1f} %" if isinstance(predicted, int | float) else "n/a"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=1800.0, help="simulated seconds of each run")
    args = parser.parse_args()
    host = HostConfig(name="gpu1", ssh="local", server_log="-")
    with TemporaryDirectory() as tmp:
        paths = write_runs(Path(tmp), args.duration)
        whole = store_of(paths)
        truth = simulated_truth(whole)
        print("| history | from | to | metric | predicted | story | error vs story | simulated | error vs simulated |")
        print("|---|---|---|---|---|---|---|---|---|")
        for history in ("host", "alone"):
            for source in range(3):
                store = whole if history == "host" else store_of([paths[source]])
                run = list_runs(store, "gpu1")[source if history == "host" else 0]
                for target in range(3):
                    if target == source:
                        continue
                    body = predict_host(store, host, FLAGS[target], run_id=run.id)
                    for metric in METRICS:
                        value = body[metric]
                        shown = f"{value:,.0f}" if isinstance(value, int | float) else "n/a"
                        print(f"| {history} | {NAMES[source]} | {NAMES[target]} | {metric} | {shown} | "
                              f"{STORY[target][metric]:,.0f} | {error(value, STORY[target][metric])} | "
                              f"{truth[target][metric]:,.0f} | {error(value, truth[target][metric])} |")
                    risks = "; ".join(r["kind"] for r in body["risks"]) or "none"
                    print(f"| {history} | {NAMES[source]} | {NAMES[target]} | risks | {risks} | | | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
