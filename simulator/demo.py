"""The demo world: simulated SGLang servers and the client as subprocesses, writing the run's files.

The story (event time, as the logs tell it): the fp8 run (0.90 + fp8_e4m3 KV + hicache: 376K
tokens, 150 running, no queue) serves for a few minutes; the owner vetoes fp8, so it is stopped with
SIGTERM and the server comes back at 0.88 + hicache in bf16 (159K tokens), which saturates: usage
0.96-0.98, a queue of ~70-90, retractions. Both runs append to one server log, the client retries
through the restart and keeps appending to `prepared/<dataset>/raw_responses.jsonl`.

Log time starts BACKFILL_S before the demo starts and runs faster than the wall clock until, after
CATCH_UP_S of wall time (at speed 1), it has caught up with now; from then on it is real time.
So within the first minute the log holds minutes of saturation and an alert has something to fire on.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from kvwatch.simulator.spec import ServerSpec
from kvwatch.simulator.workload import DATASETS

BACKFILL_S = 720.0
CATCH_UP_S = 45.0
BASELINE_RUN_S = 240.0  # simulated seconds of the fp8 run, startup included
DRAIN_S = 5.0
MODEL_PATH = "/models/Kimi-K2.5"
DEMO_DATASETS = DATASETS[1:]  # B1 was done before the story starts

BASE_FLAGS: dict[str, object] = {"model-path": MODEL_PATH, "tp-size": 8, "enable-metrics": True}

# Named flag sets for the controller: flag name without dashes -> value (True = a bare switch).
PRESETS: dict[str, dict[str, object]] = {
    "default": {"mem-fraction-static": 0.85},
    "hicache-0.88": {"mem-fraction-static": 0.88, "enable-hierarchical-cache": True, "hicache-size": 48},
    "fp8-0.90": {"mem-fraction-static": 0.90, "kv-cache-dtype": "fp8_e4m3",
                 "enable-hierarchical-cache": True, "hicache-size": 48},
    "hicache-0.93": {"mem-fraction-static": 0.93, "enable-hierarchical-cache": True, "hicache-size": 48},
}
PRESET_DESCRIPTIONS: dict[str, str] = {
    "default": "measured: 116K KV tokens, 35-50 concurrent decode reqs, 600-850 tok/s",
    "hicache-0.88": "measured: 159K KV tokens, 72 running, usage 0.96, queue 79, ~930 tok/s",
    "fp8-0.90": "measured: 376K KV tokens, 150 running, usage 0.61-0.63, no queue, 1300-1450 tok/s (vetoed)",
    "hicache-0.93": "runs out of memory at start (CUDA graph capture)",
}
# In kvwatch.toml's [[vetoes]] shape: flag, value (a glob on the value as text), reason.
VETOES: tuple[dict[str, str], ...] = (
    {"flag": "kv-cache-dtype", "value": "fp8*",
     "reason": "the owner ruled out fp8 KV cache: it degrades the model noticeably"},
)
VETOED_PRESETS: tuple[str, ...] = ("fp8-0.90",)
BASELINE_PRESET = "fp8-0.90"
SATURATING_PRESET = "hicache-0.88"


def config_tables() -> dict[str, object]:
    """`presets` and `vetoes` as kvwatch.toml's top-level tables hold them, for the demo's config."""
    return {
        "presets": {name: {"flags": dict(flags), "description": PRESET_DESCRIPTIONS[name]}
                    for name, flags in PRESETS.items()},
        "vetoes": [dict(veto) for veto in VETOES],
    }


def flag_args(flags: dict[str, object]) -> list[str]:
    """`{"tp-size": 8, "enable-metrics": True}` -> `["--tp-size", "8", "--enable-metrics"]`."""
    argv: list[str] = []
    for name, value in flags.items():
        if value is True:
            argv.append(f"--{name}")
        elif value not in (False, None):
            argv += [f"--{name}", str(value)]
    return argv


def spec_for(preset: str, port: int) -> ServerSpec:
    flags = {**BASE_FLAGS, **PRESETS[preset]}
    return ServerSpec(
        model_path=MODEL_PATH, tp_size=8, port=port, enable_metrics=True,
        mem_fraction_static=float(str(flags["mem-fraction-static"])),
        kv_cache_dtype=str(flags.get("kv-cache-dtype", "auto")),
        enable_hierarchical_cache=bool(flags.get("enable-hierarchical-cache", False)),
        hicache_size=float(str(flags.get("hicache-size", 0))),
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_shim(workdir: Path, speed: float, watch_pid: int | None = None) -> Path:
    """`python -m sglang.launch_server` that runs the simulator (PYTHONPATH puts it first).

    Servers the controller starts through it end when `watch_pid` (default: this process) does.
    """
    shim = workdir / ".sim" / "shim"
    (shim / "sglang").mkdir(parents=True, exist_ok=True)
    (shim / "sglang" / "__init__.py").write_text('"""Simulated SGLang (kvwatch demo)."""\n', encoding="utf-8")
    extra = ["--sim-speed", str(speed), "--sim-pid-file", str(workdir / ".sim" / "server.pid"),
             "--sim-watch-pid", str(watch_pid or os.getpid())]
    (shim / "sglang" / "launch_server.py").write_text(
        "import sys\n\nfrom kvwatch.simulator.server import main\n\n"
        f"sys.exit(main(sys.argv[1:] + {extra!r}))\n", encoding="utf-8")
    return shim


def write_nvidia_smi(workdir: Path, port: int) -> Path:
    """A `nvidia-smi` in `<workdir>/.sim/bin` that reports the simulated server's GPUs."""
    bin_dir = workdir / ".sim" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        f"exec {shlex.quote(sys.executable)} -m kvwatch.simulator.nvidia_smi "
        f"--sim-server http://127.0.0.1:{port} \"$@\"\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return bin_dir


def launch_line(shim: Path, port: int, preset: str) -> str:
    """The command line the controller runs to (re)start the server, SGLang's own flags only."""
    env = f"PYTHONPATH={shlex.quote(str(shim))}"
    argv = [sys.executable, "-m", "sglang.launch_server", *flag_args({**BASE_FLAGS, **PRESETS[preset]}),
            "--host", "127.0.0.1", "--port", str(port)]
    return f"{env} {shlex.join(argv)}"


@dataclass
class DemoWorld:
    workdir: Path
    server_log: Path
    client_log: Path
    outputs_glob: str
    launch: str
    target_completions: int
    port: int = 30000
    speed: float = 1.0
    presets: dict[str, dict[str, object]] = field(default_factory=lambda: dict(PRESETS))
    bin_dir: Path | None = None  # holds the simulated `nvidia-smi`: put it first on PATH to collect GPUs
    _stop: threading.Event = field(default_factory=threading.Event)
    _procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _thread: threading.Thread | None = None
    started: float = field(default_factory=time.monotonic)

    @property
    def pid_file(self) -> Path:
        return self.workdir / ".sim" / "server.pid"

    def _spawn(self, argv: list[str], log: Path) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        with log.open("ab") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=self.workdir,
                                    start_new_session=True)
        self._procs.append(proc)
        return proc

    def start_server(self, preset: str, backfill: float, warp: float) -> subprocess.Popen[bytes]:
        argv = [sys.executable, "-m", "kvwatch.simulator.server", *flag_args({**BASE_FLAGS, **PRESETS[preset]}),
                "--host", "127.0.0.1", "--port", str(self.port), "--sim-speed", str(self.speed),
                "--sim-backfill", f"{backfill:.3f}", "--sim-warp", f"{warp:.4f}",
                "--sim-drain-timeout", str(DRAIN_S), "--sim-pid-file", str(self.pid_file),
                "--sim-parent-pid", str(os.getpid())]
        return self._spawn(argv, self.server_log)

    def start_client(self) -> subprocess.Popen[bytes]:
        argv = [sys.executable, "-m", "kvwatch.simulator.client", "--url", f"http://127.0.0.1:{self.port}",
                "--workdir", str(self.workdir), "--datasets", ",".join(ds.name for ds in DEMO_DATASETS),
                "--flush", "--parent-pid", str(os.getpid())]
        return self._spawn(argv, self.client_log)

    def wait_story(self, timeout: float | None = None) -> bool:
        """True once the scripted part (baseline, veto, saturating restart) is over."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self._thread is None or not self._thread.is_alive()

    def server_pid(self) -> int | None:
        """The pid of the simulated server now running, from its pid file."""
        try:
            text = self.pid_file.read_text(encoding="utf-8").strip()
        except OSError:
            return None
        return int(text) if text.isdigit() else None

    def stop(self) -> None:
        """SIGTERM every process the demo started (and a server the controller restarted), then wait."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        pids = {p.pid for p in self._procs if p.poll() is None}
        if self.pid_file.exists():
            text = self.pid_file.read_text(encoding="utf-8").strip()
            pids.update({int(text)} if text.isdigit() else set())
        for pid in pids:
            _signal(pid, signal.SIGTERM)
        for proc in self._procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _signal(pid: int, sig: signal.Signals) -> None:
    """Signal `pid` only if it is still a simulated server (a stale pid file may name a reused pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return
    if b"simulator" in cmdline or b"sglang.launch_server" in cmdline:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _story(world: DemoWorld) -> None:
    """Baseline fp8 run, SIGTERM (the veto), then the saturating bf16 run, all in event time."""
    speed = world.speed
    catch_up = CATCH_UP_S / speed
    warp1 = 1.0 + BACKFILL_S / (speed * catch_up)
    baseline = world.start_server(BASELINE_PRESET, BACKFILL_S, warp1)
    world.start_client()
    if world._stop.wait(BASELINE_RUN_S / (warp1 * speed)):
        return
    baseline.send_signal(signal.SIGTERM)
    try:
        baseline.wait(timeout=30)
    except subprocess.TimeoutExpired:
        baseline.kill()
    if world._stop.is_set():
        return
    # The second run starts 1 s (log time) after the first ended and catches up at the same wall moment.
    e2 = time.monotonic() - world.started
    first_reached = min(warp1 * speed * e2, BACKFILL_S + speed * e2)
    backfill2 = max(BACKFILL_S + e2 - first_reached - 1.0, 0.0)
    remaining = max(catch_up - e2, 5.0 / speed)
    world.start_server(SATURATING_PRESET, backfill2, 1.0 + backfill2 / (speed * remaining))


def start_demo_world(workdir: Path, speed: float = 1.0) -> DemoWorld:
    """Start the story under `workdir` (logs/, prepared/); returns where the files are."""
    workdir = Path(workdir).resolve()
    (workdir / "logs").mkdir(parents=True, exist_ok=True)
    port = free_port()
    shim = write_shim(workdir, speed)
    world = DemoWorld(
        workdir=workdir,
        server_log=workdir / "logs" / "sglang_inference.log",
        client_log=workdir / "logs" / "inference_all.log",
        outputs_glob=str(workdir / "prepared" / "*" / "raw_responses.jsonl"),
        launch=launch_line(shim, port, SATURATING_PRESET),
        target_completions=sum(ds.count for ds in DEMO_DATASETS),
        port=port,
        speed=speed,
    )
    world.bin_dir = write_nvidia_smi(workdir, port)
    world.server_log.touch()
    world.client_log.touch()
    world._thread = threading.Thread(target=_story, args=(world,), name="demo-story", daemon=True)
    world._thread.start()
    return world
