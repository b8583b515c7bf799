"""The demo world: simulated SGLang servers and the client as subprocesses, writing the run's files.

The story is the tuning campaign of reference/the-run-it-serves.md, told on the real clock: every
line is stamped with the wall-clock instant it is written (`--sim-stamps wall`), nothing is
back-dated, so the server log, the client log, the output files, nvidia-smi and /metrics agree on
when each restart happened. At `speed` above 1 the same story runs that many times faster.

    story time  config                           what it shows
    0 s         default, --mem-fraction-static    116K tokens: saturates within the first minute
                0.85                              (usage > 0.95, a queue, the token-usage alert)
    120 s       0.88 + hicache 48                 159K tokens, still saturated, ~72 running, queue ~80
    420 s       0.90 + fp8_e4m3 KV + hicache 48   376K tokens, 150 running, no queue (the experiment)
    900 s       0.88 + hicache 48 again           the owner vetoed fp8; this server runs on, and the
                                                  controller adopts it

Each change is a SIGTERM (SGLang drains, then kills its tree) and a new server appending to the
same log; the client retries through the restarts and keeps appending to
`prepared/<dataset>/raw_responses.jsonl`. Servers boot in DEMO_LOAD_S (weights in page cache).
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

DRAIN_S = 5.0
DEMO_LOAD_S = 1.0  # weight loading + CUDA graph capture of a restart with the weights in page cache
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
# (preset, story seconds it runs; None: until the demo ends), in order.
STORY: tuple[tuple[str, float | None], ...] = (
    ("default", 120.0), (SATURATING_PRESET, 300.0), (BASELINE_PRESET, 480.0), (SATURATING_PRESET, None),
)


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


def speed_flags(speed: float) -> dict[str, object]:
    """At `speed` above 1 SGLang logs a decode batch every 40 x speed steps instead of 40, so that its
    lines stay seconds apart on the wall clock: its stamps have one-second resolution, and several
    lines within one second would give one instant several values."""
    return {"decode-log-interval": round(40 * speed)} if speed > 1 else {}


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
             "--sim-watch-pid", str(watch_pid or os.getpid()), "--sim-stamps", "wall",
             "--sim-load-s", str(DEMO_LOAD_S)]
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


def launch_line(shim: Path, port: int, preset: str, speed: float = 1.0) -> str:
    """The command line the controller runs to (re)start the server, SGLang's own flags only."""
    env = f"PYTHONPATH={shlex.quote(str(shim))}"
    flags = {**BASE_FLAGS, **speed_flags(speed), **PRESETS[preset]}
    argv = [sys.executable, "-m", "sglang.launch_server", *flag_args(flags),
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

    def start_server(self, preset: str) -> subprocess.Popen[bytes]:
        flags = {**BASE_FLAGS, **speed_flags(self.speed), **PRESETS[preset]}
        argv = [sys.executable, "-m", "kvwatch.simulator.server", *flag_args(flags),
                "--host", "127.0.0.1", "--port", str(self.port), "--sim-speed", str(self.speed),
                "--sim-stamps", "wall", "--sim-load-s", str(DEMO_LOAD_S),
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
    """The campaign's configs one after another (STORY), each stopped with SIGTERM, on the wall clock."""
    server = None
    for index, (preset, run_s) in enumerate(STORY):
        if server is not None:
            _stop_server(server)
        if world._stop.is_set():
            return
        server = world.start_server(preset)
        if index == 0:
            world.start_client()
        if run_s is None or world._stop.wait(run_s / world.speed):
            return


def _stop_server(server: subprocess.Popen[bytes]) -> None:
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


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
        launch=launch_line(shim, port, SATURATING_PRESET, speed),
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
