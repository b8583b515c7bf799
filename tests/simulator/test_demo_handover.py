"""A person's restart that lands while the story is between two configs (its server got SIGTERM and is
draining): nothing is handed to the controller (adopting a process that is exiting fails with "no
running process"), and the story's server is gone before the person's server is started."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

from kvwatch.simulator.demo import DemoWorld

# a server that drains for a second after SIGTERM, as the simulated one drains its requests
DRAINS_ONE_SECOND = ("import signal, sys, time\n"
                     "signal.signal(signal.SIGTERM, lambda *_: (time.sleep(1.0), sys.exit(0)))\n"
                     "print('up', flush=True)\n"
                     "time.sleep(60)\n")


def draining_server() -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", DRAINS_ONE_SECOND], stdout=subprocess.PIPE,
                            start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline() == b"up\n"  # its handler is installed
    return proc


def world(tmp_path: Path, server: subprocess.Popen[bytes]) -> DemoWorld:
    w = DemoWorld(workdir=tmp_path, server_log=tmp_path / "server.log", client_log=tmp_path / "client.log",
                  outputs_glob=str(tmp_path / "*.jsonl"), launch="", target_completions=1)
    w._story_server = server
    return w


def test_a_restart_while_the_story_stops_its_server_waits_for_it_and_adopts_nothing(tmp_path: Path) -> None:
    server = draining_server()
    w = world(tmp_path, server)
    stopping = threading.Thread(target=w._stop_story_server, args=(server,))
    stopping.start()
    deadline = time.monotonic() + 5
    while w._stopping is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert w._stopping is server
    adopted: list[int] = []
    assert w.take_wheel(adopted.append) is True  # the story was playing
    assert adopted == []
    assert server.poll() == 0  # exited, after its drain, before take_wheel returned
    stopping.join(5)
    assert w._stopping is None


def test_a_restart_while_the_story_server_runs_hands_it_over_once(tmp_path: Path) -> None:
    server = draining_server()
    try:
        w = world(tmp_path, server)
        adopted: list[int] = []
        assert w.take_wheel(adopted.append) is True
        assert w.take_wheel(adopted.append) is False  # the story is over; handed once
        assert adopted == [server.pid]
        assert server.poll() is None
    finally:
        server.kill()
        server.wait()
