"""The demo world: simulated SGLang servers and the client as subprocesses, writing the run's files.

The story is the tuning campaign of reference/the-run-it-serves.md, told on the real clock: every
line is stamped with the wall-clock instant it is written (`--sim-stamps wall`), nothing is
back-dated, so the server log, the client log, the output files, nvidia-smi and /metrics agree on
when each restart happened. At `speed` above 1 the same story runs that many times faster.

STORY names the configs in order and how long each runs; simulator/campaign.py declares each
config's flags and what the demo plays with it (README's story table is made from it). The first
config saturates within the first minute (usage > 0.95, a queue, the token-usage alert); the last
runs on until the demo ends, and the controller adopts it.

A person's restart (the page, the API) takes the wheel: `take_wheel` stops the story for good and
hands its running server to the controller, which stops it and starts the person's.

Each change is a SIGTERM (SGLang drains, then kills its tree) and a new server appending to the
same log; the client retries through the restarts and keeps appending to
`prepared/<dataset>/raw_responses.jsonl`. Servers boot in DEMO_LOAD_S (weights in page cache).
`stop()` ends every simulated server started for the demo (listed in `.sim/pids`) and the client.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kvwatch.simulator import lifeline
from kvwatch.simulator.campaign import PRESET_DESCRIPTIONS, PRESETS
from kvwatch.simulator.launch import (
    BASE_FLAGS,
    DEMO_LOAD_S,
    DRAIN_S,
    MODEL_PATH,
    PIDS_DIR,
    flag_args,
    free_port,
    launch_line,
    spec_for,
    speed_flags,
    write_nvidia_smi,
    write_shim,
)
from kvwatch.simulator.workload import DATASETS

__all__ = ["BASE_FLAGS", "DEMO_LOAD_S", "DRAIN_S", "MODEL_PATH", "PRESETS", "PRESET_DESCRIPTIONS", "flag_args",
           "free_port", "launch_line", "spec_for", "speed_flags", "write_nvidia_smi", "write_shim"]

DEMO_DATASETS = DATASETS[1:]  # B1 was done before the story starts
STOP_GRACE_S = 15.0  # after SIGTERM, a simulated server's drain (DRAIN_S of story time) and its exit
STOP_DRAIN_S = 30.0  # how long the story waits for its server to exit after SIGTERM before killing it
STOP_WAIT_S = STOP_DRAIN_S + 10.0  # a person's restart waits this long for a server the story is stopping
log = logging.getLogger(__name__)

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
    _stop: threading.Event = field(default_factory=threading.Event)  # the demo ends
    _story_over: threading.Event = field(default_factory=threading.Event)  # no more scripted restarts
    _procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _thread: threading.Thread | None = None
    started: float = field(default_factory=time.monotonic)
    # Held while the story starts a server and while a server is handed over: the story never starts one
    # after a person took the wheel, and hands over the one it started last.
    _wheel: threading.Lock = field(default_factory=threading.Lock)
    _story_server: subprocess.Popen[bytes] | None = None
    _stopping: subprocess.Popen[bytes] | None = None  # the story's server it is stopping (SIGTERM sent, draining)
    _handed: bool = False
    wheel_taken_at: float | None = None  # when a person's restart stopped the story
    story: tuple[tuple[str, float | None], ...] = ()  # the configs this world plays, in order
    _client: subprocess.Popen[bytes] | None = None

    @property
    def pid_file(self) -> Path:
        return self.workdir / ".sim" / "server.pid"

    @property
    def pids_dir(self) -> Path:
        return self.workdir / PIDS_DIR

    def _spawn(self, argv: list[str], log: Path, own_group: bool) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        with log.open("ab") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=self.workdir,
                                    start_new_session=own_group)
        self._procs.append(proc)
        return proc

    def start_server(self, preset: str) -> subprocess.Popen[bytes]:
        """A server of the story. It leads a process group of its own: the controller takes over a server
        (adopts it) only so, and stops it by that group."""
        flags = {**BASE_FLAGS, **speed_flags(self.speed), **PRESETS[preset]}
        argv = [sys.executable, "-m", "kvwatch.simulator.server", *flag_args(flags),
                "--host", "127.0.0.1", "--port", str(self.port), "--sim-speed", str(self.speed),
                "--sim-stamps", "wall", "--sim-load-s", str(DEMO_LOAD_S),
                "--sim-drain-timeout", str(DRAIN_S), "--sim-pid-file", str(self.pid_file),
                "--sim-pid-dir", str(self.pids_dir), "--sim-parent-pid", str(os.getpid())]
        return self._spawn(argv, self.server_log, own_group=True)

    def start_client(self) -> subprocess.Popen[bytes]:
        """The client, in the demo's own process group: Ctrl-C in the terminal reaches it too."""
        argv = [sys.executable, "-m", "kvwatch.simulator.client", "--url", f"http://127.0.0.1:{self.port}",
                "--workdir", str(self.workdir), "--datasets", ",".join(ds.name for ds in DEMO_DATASETS),
                "--flush", "--parent-pid", str(os.getpid())]
        self._client = self._spawn(argv, self.client_log, own_group=False)
        return self._client

    def stall_client(self) -> bool:
        """Freeze the client (SIGSTOP) as a hung data loader would: the server drains and idles, no
        output line is written. True if there was a client to freeze."""
        client = self._client
        if client is None or client.poll() is not None:
            return False
        os.kill(client.pid, signal.SIGSTOP)
        return True

    def wait_story(self, timeout: float | None = None) -> bool:
        """True once the scripted part is over (played to its end, or stopped)."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self._thread is None or not self._thread.is_alive()

    def take_wheel(self, adopt: Callable[[int], None]) -> bool:
        """A person restarts the server: the story stops for good (it starts no other server) and its
        running server is handed to `adopt`, so that the person's restart stops it. True if the story
        was still playing."""
        with self._wheel:
            playing = not self._story_over.is_set()
            if playing:
                self.wheel_taken_at = time.time()
            self._story_over.set()
        self.hand_over(adopt)
        return playing

    def hand_over(self, adopt: Callable[[int], None]) -> None:
        """Give the story's running server to `adopt` (the controller's), once."""
        with self._wheel:
            server = self._story_server
            if self._handed or server is None or server.poll() is not None:
                return
            if server is not self._stopping:
                adopt(server.pid)
                self._handed = True
                return
        # The story was between two configs: its server drains and exits, and (the story being over) no
        # next one starts. Nothing to hand over; waiting frees the port before the person's server starts.
        try:
            server.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            log.warning("demo: the story's server %d is still stopping", server.pid)

    def _stop_story_server(self, server: subprocess.Popen[bytes]) -> None:
        with self._wheel:
            self._stopping = server
        try:
            _stop_server(server)
        finally:
            with self._wheel:
                self._stopping = None

    def _start_story_server(self, preset: str, first: bool) -> bool:
        """Start the story's next server, unless the story is over; False then."""
        with self._wheel:
            if self._story_over.is_set() or self._stop.is_set():
                return False
            self._story_server = self.start_server(preset)
        if first:
            self.start_client()
        return True

    def server_pids(self) -> set[int]:
        """Every simulated server started for this demo (by the story or the controller) still running."""
        try:
            names = [entry.name for entry in self.pids_dir.iterdir()]
        except OSError:
            names = []
        pids = {int(name) for name in names if name.isdigit()} | {p.pid for p in self._procs}
        return {pid for pid in pids if lifeline.alive(pid) and _is_simulated(pid)}

    def stop(self) -> None:
        """End every process the demo or its controller started: SIGTERM, then SIGKILL to each server's
        process group and the client after STOP_GRACE_S."""
        self._stop.set()
        self._story_over.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        for proc in self._procs:  # a stalled (stopped) client takes its SIGTERM only once continued
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGCONT)
        pids = self.server_pids()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        while time.monotonic() < deadline and any(lifeline.alive(pid) for pid in pids):
            time.sleep(0.1)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)  # each server leads its group (SGLang's children with it)
        for proc in self._procs:
            try:
                proc.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _is_simulated(pid: int) -> bool:
    """Still a simulated server or client (a stale pid file may name a reused pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"simulator" in cmdline or b"sglang.launch_server" in cmdline


def _story(world: DemoWorld) -> None:
    """The campaign's configs one after another (STORY), each stopped with SIGTERM, on the wall clock,
    until the story is over: played to its end, the demo stopped, or a person took the wheel."""
    server = None
    for index, (preset, run_s) in enumerate(world.story or STORY):
        if server is not None:
            world._stop_story_server(server)
        if not world._start_story_server(preset, first=index == 0):
            return
        server = world._story_server
        if run_s is None or world._story_over.wait(run_s / world.speed):
            return


def _stop_server(server: subprocess.Popen[bytes]) -> None:
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=STOP_DRAIN_S)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def start_demo_world(workdir: Path, speed: float = 1.0,
                     story: tuple[tuple[str, float | None], ...] | None = None) -> DemoWorld:
    """Start the story (STORY, or `story`: a fleet's hosts start it at different configs) under
    `workdir` (logs/, prepared/); returns where the files are."""
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
    world.story = story or STORY
    world.bin_dir = write_nvidia_smi(workdir, port)
    world.server_log.touch()
    world.client_log.touch()
    world._thread = threading.Thread(target=_story, args=(world,), name="demo-story", daemon=True)
    world._thread.start()
    return world
