"""The demo world: a simulated SGLang server, its client and their files, on this machine.

`start_demo_world(workdir)` starts them and returns where the files are; `DemoWorld.stop()` ends them.
Log timestamps are event time. The clock starts `BACKFILL_S` in the past and runs `WARP` times faster
than the wall clock until it reaches now, so that within the first minute (speed 1) the server log
holds minutes of a run: a start, the warm-up burst, then saturation (token usage above 0.95, a queue).
"""

from __future__ import annotations

import functools
import os
import random
import shlex
import threading
from dataclasses import dataclass, field
from pathlib import Path

from simulator import startup
from simulator.clock import SimClock
from simulator.engine import Engine, EngineConfig, Request
from simulator.logwriter import LogWriter
from simulator.spec import ServerSpec
from simulator.workload import DATASETS, Dataset, OutputSink, response_text, sample_lengths, tqdm_line

BACKFILL_S = 480.0
WARP = 9.0  # with BACKFILL_S: the clock reaches now after 60 s of wall time at speed 1
CLIENT_CONCURRENCY = 150
MODEL_PATH = "/models/Kimi-K2.5"

SATURATING_SPEC = ServerSpec(
    model_path=MODEL_PATH, tp_size=8, mem_fraction_static=0.88, enable_hierarchical_cache=True,
    hicache_size=48, port=30000, enable_metrics=True,
)


def launch_command(spec: ServerSpec) -> str:
    """The SGLang command line the controller would run for `spec`."""
    parts = ["python", "-m", "sglang.launch_server", "--model-path", spec.model_path]
    parts += ["--tp", str(spec.tp_size)]
    if spec.mem_fraction_static is not None:
        parts += ["--mem-fraction-static", str(spec.mem_fraction_static)]
    if spec.kv_cache_dtype != "auto":
        parts += ["--kv-cache-dtype", spec.kv_cache_dtype]
    if spec.enable_hierarchical_cache:
        parts += ["--enable-hierarchical-cache", "--hicache-size", f"{spec.hicache_size:g}"]
    parts += ["--host", spec.host, "--port", str(spec.port)]
    if spec.enable_metrics:
        parts.append("--enable-metrics")
    return shlex.join(parts)


class _ClosedLoopClient:
    """Keeps CLIENT_CONCURRENCY requests in flight, dataset after dataset, like the run's client."""

    def __init__(self, engine: Engine, workdir: Path, client_log: Path, seed: int,
                 datasets: tuple[Dataset, ...] = DATASETS[1:]) -> None:
        self.engine = engine
        self.rng = random.Random(seed)
        self.sink = OutputSink(workdir)
        self.log = client_log.open("a", encoding="utf-8")
        self.queue: list[tuple[Dataset, int]] = [(ds, i) for ds in datasets for i in range(ds.count)]
        self.next_index = 0
        self.done: dict[str, int] = {}
        self.started: dict[str, float] = {}

    def fill(self) -> None:
        in_flight = self.next_index - sum(self.done.values())
        while in_flight < CLIENT_CONCURRENCY and self.next_index < len(self.queue):
            ds, index = self.queue[self.next_index]
            self.next_index += 1
            in_flight += 1
            self.started.setdefault(ds.name, self.engine.t)
            prompt, response = sample_lengths(self.rng, ds)
            self.engine.submit(Request(
                rid=f"{ds.name}-{index}", prompt_tokens=prompt, output_tokens=response,
                max_new_tokens=ds.max_new_tokens, prefix_key=ds.name, prefix_tokens=ds.system_prompt_tokens,
                on_done=functools.partial(self._done, ds),
            ))

    def _done(self, ds: Dataset, req: Request) -> None:
        self.done[ds.name] = self.done.get(ds.name, 0) + 1
        self.sink.append(ds.name, {
            "id": req.rid, "dataset": ds.name, "response": response_text(self.rng, req.output_tokens),
            "usage": {"prompt_tokens": req.prompt_tokens, "completion_tokens": req.generated},
        })
        n = self.done[ds.name]
        if n % 5 == 0 or n == ds.count:
            elapsed = self.engine.t - self.started.get(ds.name, 0.0)
            self.log.write(tqdm_line(ds.name, n, ds.count, elapsed) + "\n")
            self.log.flush()
        self.fill()

    def close(self) -> None:
        self.sink.close()
        self.log.close()


@dataclass
class DemoWorld:
    workdir: Path
    server_log: Path
    client_log: Path
    outputs_glob: str
    launch: str
    target_completions: int
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)


def _run_server(world: DemoWorld, spec: ServerSpec, clock: SimClock, seed: int) -> None:
    with world.server_log.open("a", encoding="utf-8") as stream:
        log = LogWriter(stream, spec.fmt, clock, tp_size=spec.tp_size)
        t = startup.write_boot(log, spec)
        t = startup.write_capacity(log, spec, t)
        t = startup.write_ready(log, spec, t, os.getpid())
        engine = Engine(EngineConfig(
            max_total_num_tokens=spec.capacity().max_total_num_tokens,
            max_running_requests=spec.max_running(), decode_log_interval=spec.decode_log_interval,
            cuda_graph_max_bs=spec.graph_max_bs, seed=seed,
        ), log)
        engine.t = t
        client = _ClosedLoopClient(engine, world.workdir, world.client_log, seed + 1)
        client.fill()
        try:
            while not world._stop.wait(0.05):
                engine.advance_to(clock.sim_now())
        finally:
            client.close()


def start_demo_world(workdir: Path, speed: float = 1.0, seed: int = 0) -> DemoWorld:
    """Start the simulated server and client writing under `workdir`; returns their paths."""
    workdir = Path(workdir)
    (workdir / "logs").mkdir(parents=True, exist_ok=True)
    spec = SATURATING_SPEC
    world = DemoWorld(
        workdir=workdir,
        server_log=workdir / "logs" / "sglang_inference.log",
        client_log=workdir / "logs" / "inference_all.log",
        outputs_glob=str(workdir / "prepared" / "*" / "raw_responses.jsonl"),
        launch=launch_command(spec),
        target_completions=sum(ds.count for ds in DATASETS[1:]),
    )
    world.client_log.touch()
    clock = SimClock(speed=speed, backfill_s=BACKFILL_S, warp=WARP)
    thread = threading.Thread(target=_run_server, args=(world, spec, clock, seed), name="sim-server",
                              daemon=True)
    world._threads.append(thread)
    thread.start()
    return world
