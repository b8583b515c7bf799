"""How the demo starts a simulated SGLang server: its command lines, the `sglang` stand-in and `nvidia-smi`."""

from __future__ import annotations

import os
import shlex
import socket
import sys
from pathlib import Path

from kvwatch.simulator.campaign import PRESETS
from kvwatch.simulator.spec import ServerSpec

DRAIN_S = 5.0
DEMO_LOAD_S = 1.0  # weight loading + CUDA graph capture of a restart with the weights in page cache
MODEL_PATH = "/models/Kimi-K2.5"
BASE_FLAGS: dict[str, object] = {"model-path": MODEL_PATH, "tp-size": 8, "enable-metrics": True}
PIDS_DIR = Path(".sim") / "pids"  # under the workdir: every simulated server the demo or its controller started


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
             "--sim-pid-dir", str(workdir / PIDS_DIR), "--sim-drain-timeout", str(DRAIN_S),
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
