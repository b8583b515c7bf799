"""`kvwatch demo --hosts 3`: three simulated servers on different configs, one whose client stalls,
all on the fleet view's API; Ctrl-C ends every process of the three (issue #35)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.processes import stop_group
from tests.fixtures.web import free_port

REPO = Path(__file__).resolve().parents[2]
SPEED = 8.0
pytestmark = pytest.mark.timeout(300)


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())


def until(check: Any, what: str, timeout: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except OSError:
            last = None
        if last:
            return last
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def group_members(pgid: int) -> list[str]:
    """`pid state command` of each process in the group (a zombie's state is Z)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:
                cmd = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{stat.parent.name} {fields[0]} {cmd[:120]}")
    return found


def test_three_hosts_on_different_configs_and_a_stalled_one(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with (tmp_path / "demo.log").open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kvwatch.app", "demo", "--no-browser", "--port", str(port), "--hosts", "3",
             "--workdir", str(tmp_path / "world"), "--speed", str(SPEED)],
            cwd=REPO, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    servers: list[int] = []
    try:
        def every_host_decoding() -> dict[str, Any] | None:
            fleet = get(f"{url}/api/fleet")
            rows = fleet["hosts"]
            return fleet if len(rows) == 3 and all(r["run"] and r["gen_throughput"] for r in rows) else None

        fleet = until(every_host_decoding, "three hosts decoding")
        servers += [int(p.name) for d in (tmp_path / "world").glob("node*/.sim/pids") for p in d.iterdir()
                    if p.name.isdigit()]
        assert len(servers) >= 3, servers
        flags = {r["host"]: r["flags"].get("mem-fraction-static") for r in fleet["hosts"]}
        assert flags == {"node1": 0.85, "node2": 0.88, "node3": 0.9}, flags
        assert sum(1 for r in fleet["hosts"] if r["config_diff"]) >= 2  # three configs: two differ from any one
        # node3's client freezes STALL_AFTER_S of story time in: its output count stops growing
        def outputs(host: str) -> float | None:
            status = get(f"{url}/api/hosts/{host}/status")
            return status["completions"]

        time.sleep(150 / SPEED + 5)
        before = {h: outputs(h) for h in ("node1", "node3")}
        time.sleep(60 / SPEED + 4)
        after = {h: outputs(h) for h in ("node1", "node3")}
        assert after["node3"] == before["node3"], (before, after)
        assert (after["node1"] or 0) > (before["node1"] or 0), (before, after)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                stop_group(proc)
    log = (tmp_path / "demo.log").read_text(errors="replace")
    assert proc.returncode == 0, log[-2000:]
    assert not [pid for pid in servers if group_alive(pid)], "a simulated server outlived the demo"
    deadline = time.monotonic() + 5  # a child mid-exit when the demo returned
    while group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not group_alive(proc.pid), f"a process of the demo's group outlived it: {group_members(proc.pid)}"
