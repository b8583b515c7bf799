"""A person's restart takes the wheel from the demo's story, and Ctrl-C on `kvwatch demo` leaves nothing.

Both run a real `kvwatch demo` subprocess in a session of its own (as a terminal runs `make demo`) and
restart its server through the API the page uses, 40 s of story time in: during the story's first run,
long before its scripted switch to 0.88 at 120 s."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from kvwatch.simulator import capacity, demo
from tests.fixtures.processes import stop_group
from tests.fixtures.web import free_port

REPO = Path(__file__).resolve().parents[2]
SPEED = 8.0
TOKEN = "wheel-test-token-8c1f0e6a9b2d4f37"
RESTART_AT_S = 40.0  # story seconds
FLAGS = {"mem-fraction-static": 0.87}  # on top of the launch line (0.88 + hicache 48): a config the story never plays
CAPACITY_087 = capacity.kv_capacity(capacity.KIMI_K25, 0.87).max_total_num_tokens


@dataclass
class RunningDemo:
    url: str
    proc: subprocess.Popen[bytes]
    workdir: Path
    started: float

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=30) as answer:
            return json.loads(answer.read())

    def post(self, path: str, body: dict[str, Any] | None, method: str = "POST",
             token: str | None = TOKEN) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=60) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    @property
    def story_log(self) -> Path:
        return self.workdir / "logs" / "sglang_inference.log"

    def story_start(self) -> float:
        """The wall-clock second the story's first server logged its first line (the stamps are the wall clock)."""
        first = self.until(lambda: re.match(r"\[([^\]]+)\]", self.story_log.read_text(errors="replace")),
                           "the story's first line")
        return datetime.strptime(first.group(1), "%Y-%m-%d %H:%M:%S").timestamp()

    def tail(self) -> str:
        return (self.workdir.parent / "demo.log").read_text(errors="replace")[-3000:]

    def until(self, check: Callable[[], Any], what: str, timeout: float = 120.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            assert self.proc.poll() is None, f"kvwatch demo exited {self.proc.returncode}:\n{self.tail()}"
            try:
                found = check()
                if found:
                    return found
            except OSError:
                pass
            assert time.monotonic() < deadline, f"timed out waiting for {what}:\n{self.tail()}"
            time.sleep(0.3)

    def restart_at(self, story_s: float, flags: dict[str, object]) -> dict[str, Any]:
        """POST the restart `story_s` seconds of story time after the demo started; the finished operation."""
        self.until(lambda: "ready to roll" in self.story_log.read_text(), "the story's first server")
        time.sleep(max(self.story_start() + story_s / SPEED - time.time(), 0.0))
        status, answer = self.post("/api/hosts/demo/restart", {"flags": flags})
        assert status == 202, answer
        assert (time.time() - self.story_start()) * SPEED < demo.STORY[0][1] - 30  # still the story's first run
        done = self.until(lambda: (lambda s: s if not s["busy"] and s["operation"]["outcome"] else None)(
            self.get("/api/hosts/demo/restart")), "the restart to finish")
        operation: dict[str, Any] = done["operation"]
        assert operation["run_id"] == answer["run_id"]
        return operation


@contextmanager
def kvwatch_demo(tmp_path: Path) -> Iterator[RunningDemo]:
    port = free_port()
    with (tmp_path / "demo.log").open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kvwatch.app", "demo", "--no-browser", "--port", str(port),
             "--workdir", str(tmp_path / "world"), "--speed", str(SPEED)],
            cwd=REPO, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "KVWATCH_TOKEN": TOKEN},
        )
    running = RunningDemo(f"http://127.0.0.1:{port}", proc, tmp_path / "world", time.monotonic())
    try:
        running.until(lambda: running.get("/api/hosts"), "the demo to answer")
        yield running
    finally:
        if proc.poll() is None:
            stop_group(proc)


def capacities(log: Path) -> list[int]:
    return [int(m) for m in re.findall(r"max_total_num_tokens=(\d+)", log.read_text(errors="replace"))]


def test_a_restart_40s_in_runs_the_persons_flags_and_the_story_stops_for_good(tmp_path: Path) -> None:
    with kvwatch_demo(tmp_path) as running:
        operation = running.restart_at(RESTART_AT_S, FLAGS)
        assert operation["outcome"] == "ok", (operation["detail"], operation["steps"])
        assert operation["to_flags"]["mem-fraction-static"] == 0.87
        assert capacities(Path(operation["log_path"])) == [CAPACITY_087]
        seen: list[Any] = []

        def persons_run() -> bool:
            seen[:] = [(r["id"], r["state"], r["flags"].get("mem-fraction-static"),
                        (r["capacity"] or {}).get("max_total_num_tokens")) for r in running.get("/api/runs?host=demo")]
            return seen[-1][:3] == (operation["run_id"], "running", 0.87) and \
                seen[-1][3] == CAPACITY_087

        try:
            running.until(persons_run, "the person's run in the registry", timeout=60)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nruns: {seen}") from None
        # Past the story's next switch (120 s) and the one after (420 s): it started no other server.
        time.sleep(max(running.story_start() + 480 / SPEED - time.time(), 0.0))
        assert capacities(running.story_log) == [capacities(running.story_log)[0]]  # the first run only
        view = running.get("/api/hosts/demo/controller")
        assert view["current"]["running"] and view["current"]["run_id"] == operation["run_id"]
        assert view["notice"]["message"].startswith("the demo's story stopped: you restarted the server")
        assert abs(view["notice"]["at"] - operation["requested_at"]) < 5
        assert capacities(Path(operation["log_path"])) == [CAPACITY_087]


def processes_in_group(pgid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if stat[0] != "Z" and int(stat[2]) == pgid:
            found.append(int(entry.name))
    return found


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_after_a_restart_leaves_no_process_and_frees_the_ports(tmp_path: Path, sig: signal.Signals) -> None:
    with kvwatch_demo(tmp_path) as running:
        operation = running.restart_at(RESTART_AT_S, FLAGS)
        assert operation["outcome"] == "ok", (operation["detail"], operation["steps"])
        server = running.get("/api/hosts/demo/controller")["current"]
        server_pid, sim_port = int(server["pid"]), int(operation["to_flags"].get("port") or 0)
        groups = {running.proc.pid, os.getpgid(server_pid)}
        web_port = int(running.url.rsplit(":", 1)[1])
        os.killpg(running.proc.pid, sig)  # Ctrl-C in the terminal: SIGINT to the foreground group
        assert running.proc.wait(timeout=60) == 0
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(processes_in_group(g) for g in groups):
            time.sleep(0.2)
        left = {g: processes_in_group(g) for g in groups}
        for pids in left.values():  # never leave them behind, even when the assertion below fails
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
        assert left == {g: [] for g in groups}
        assert port_free(web_port)
        assert sim_port == 0 or port_free(sim_port)
