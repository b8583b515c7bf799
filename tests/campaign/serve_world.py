"""`kvwatch serve` over a demo world this test process owns, so that kvwatch can be killed and started
again while the simulated server and client live on (a `kvwatch demo` takes its world down with it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kvwatch.app.commands.demo import demo_config
from kvwatch.app.config.show import as_toml
from kvwatch.simulator.demo import DemoWorld, start_demo_world
from tests.fixtures.processes import stop_group
from tests.fixtures.web import free_port
from tests.simulator.test_demo_wheel import REPO, SPEED, TOKEN, RunningDemo


def write_config(world: DemoWorld, workdir: Path, port: int) -> Path:
    """The demo's own config (app/commands/demo.py) as a kvwatch.toml for `kvwatch serve`: the keys
    it sets, written as `kvwatch config check` writes a config."""
    config = demo_config(world, workdir, port=port)
    data = config.model_dump(by_alias=True, exclude_unset=True, exclude={"path"})
    data["server"] = {"host": "127.0.0.1", "port": port, "data_dir": str(workdir), "database": config.server.database}
    path = workdir / "kvwatch.toml"
    path.write_text(as_toml(data))
    return path


@contextmanager
def world_without_story(tmp_path: Path) -> Iterator[DemoWorld]:
    """The demo's world with its story stopped once its first server is up, and that server stopped: the
    client keeps asking (it retries), and only kvwatch's controller starts servers from then on."""
    world = start_demo_world(tmp_path / "world", speed=SPEED)
    try:
        waiter = RunningDemo("", _NeverExits(), world.workdir, 0.0)
        waiter.until(lambda: "ready to roll" in world.server_log.read_text(), "the story's first server")
        world.take_wheel(lambda pid: os.kill(pid, signal.SIGTERM))
        waiter.until(lambda: not world.server_pids() - set(_client_pids(world)), "the story's server to stop")
        yield world
    finally:
        world.stop()


class _NeverExits:
    returncode = None

    def poll(self) -> None:
        return None


def _client_pids(world: DemoWorld) -> list[int]:
    alive = [p.pid for p in world._procs if p.poll() is None]
    return [pid for pid in alive if b"client" in Path(f"/proc/{pid}/cmdline").read_bytes()]


def serve(config: Path, world: DemoWorld, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "KVWATCH_TOKEN": TOKEN,
           "PATH": f"{world.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-m", "kvwatch.app", "serve", "--config", str(config)],
                                cwd=REPO, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env)


def kill9(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        stop_group(proc)


__all__ = ["free_port", "kill9", "serve", "stop", "world_without_story", "write_config"]
