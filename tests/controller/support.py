"""Helpers for the controller tests: in-memory sinks, a free port, a [[hosts]] table for the fake server."""

from __future__ import annotations

import json
import shlex
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kvwatch.app.config.controller import ControllerConfig
from kvwatch.app.controller.policy import parse_controller_config
from kvwatch.app.controller.sinks import RestartRecord
from kvwatch.app.flags.schema import FlagValue

FAKE_SERVER = Path(__file__).with_name("fake_server.py")


class MemorySinks:
    """AuditSink and RunSink in memory, as the store will implement them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.audits: list[RestartRecord] = []
        self.started: list[tuple[str, str, dict[str, FlagValue], str]] = []
        self.ended: list[tuple[str, str, str]] = []

    def record_restart(self, record: RestartRecord) -> None:
        with self.lock:
            self.audits.append(record)

    def run_started(self, host: str, flags: dict[str, FlagValue], log_path: str, started_at: float) -> str:
        with self.lock:
            run_id = f"{host}-run{len(self.started) + 1}"
            self.started.append((host, run_id, flags, log_path))
            return run_id

    def run_ended(self, host: str, run_id: str, ended_at: float, reason: str) -> None:
        with self.lock:
            self.ended.append((host, run_id, reason))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def host_table(tmp: Path, port: int, python: str = sys.executable, server: str = str(FAKE_SERVER),
               env: str = "", **restart: Any) -> dict[str, Any]:
    """A [[hosts]] table as kvwatch.toml would give it, launching the fake server."""
    launch = f"{env} {shlex.quote(python)} {shlex.quote(server)} --model-path /models/Kimi-K2.5 --port {port}"
    return {
        "name": "gpu1",
        "server_log": f"{tmp}/logs/sglang_inference.log",
        "launch": launch.strip(),
        "presets": {
            "bf16-hicache-088": {"description": "159K", "flags": {"mem-fraction-static": 0.88,
                                                                 "enable-hierarchical-cache": True,
                                                                 "hicache-size": 48}},
            "fp8-hicache-090": {"flags": {"mem-fraction-static": 0.90, "kv-cache-dtype": "fp8_e4m3"}},
        },
        "vetoes": [{"flag": "kv-cache-dtype", "value": "fp8*", "reason": "degrades the model noticeably"}],
        "restart": {"python": python, "flags_schema": "0.5.23", "state_dir": f"{tmp}/state",
                    "stop_timeout": 3, "ready_timeout": 60, "poll_interval": 0.1, **restart},
    }


def make_config(tmp: Path, port: int, **kwargs: Any) -> ControllerConfig:
    config = parse_controller_config(host_table(tmp, port, **kwargs))
    assert config is not None
    return config




def instances(port: int) -> list[int]:
    """Pids of fake servers serving `port` (test assertion only: kvwatch itself never looks by pattern)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(FAKE_SERVER).encode() in args and f"--port={port}".encode() in args and state != "Z":
            found.append(int(entry.name))
    return found


def when_state(operation_holder: Callable[[], Any], state: str, action: Callable[[], None],
               timeout: float = 30.0) -> threading.Thread:
    """Run `action` once the current operation reaches `state` (a fault injected mid-restart)."""

    def watch() -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            op = operation_holder()
            if op is not None and op.state == state:
                action()
                return
            time.sleep(0.005)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def record_recycled_pid(state: Path, pid: int) -> None:
    """A controller record naming `pid` (its real command line) with a start time it never had: the
    situation after the server died and the kernel gave its pid to another process."""
    state.mkdir(parents=True, exist_ok=True)
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1]
    (state / "current.json").write_text(json.dumps({
        "run_id": "old", "pid": pid, "starttime": 1, "host": "127.0.0.1", "port": 1,
        "cmdline": [part.decode() for part in cmdline]}))
