"""The demo world tells its story on its own: fp8 baseline, restart, sustained saturation with a queue."""

from __future__ import annotations

import fnmatch
import glob
import os
import shlex
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from kvwatch.simulator import demo, flags
from tests.simulator.helpers import REPO, parse_log

SPEED = 4.0  # the first minute of the story in 15 s


def saturated_span(decodes: list[dict[str, Any]]) -> tuple[float, int]:
    """Longest stretch (log seconds) of decode lines all above 0.95, and the largest queue in it."""
    best, start, queue, best_queue = 0.0, None, 0, 0
    for record in decodes:
        t = datetime.fromisoformat(record["ts"]).timestamp()
        if record["token_usage"] > 0.95:
            start = t if start is None else start
            queue = max(queue, record["queue_req"])
            if t - start > best:
                best, best_queue = t - start, queue
        else:
            start, queue = None, 0
    return best, best_queue


def test_story_saturates_for_two_minutes_of_log_time(tmp_path: Path) -> None:
    world = demo.start_demo_world(tmp_path, speed=SPEED)
    try:
        deadline = time.monotonic() + 120
        span, queue, records = 0.0, 0, []
        while time.monotonic() < deadline and span < 150:
            time.sleep(2)
            records = parse_log(world.server_log)
            span, queue = saturated_span([r for r in records if r["kind"] == "decode"])
        elapsed = time.monotonic() - world.started
        assert span >= 120, f"saturated for {span:.0f} s of log time after {elapsed:.0f} s"
        assert queue > 30
        capacities = [r["max_total_num_tokens"] for r in records if r["kind"] == "capacity"]
        assert capacities == [375304, 158983]  # fp8 baseline, then the bf16 0.88 + hicache run
        events = [r["event"] for r in records if r["kind"] == "event"]
        assert events.count("ready") == 2
        assert "retract" in events
        outputs = glob.glob(world.outputs_glob)
        assert outputs
        assert sum(len(Path(p).read_text().splitlines()) for p in outputs) > 0
        assert "B2_opencodeinstruct:" in world.client_log.read_text()
    finally:
        world.stop()
    assert all(p.poll() is not None for p in world._procs)


def test_launch_line_and_presets_are_valid_sglang_command_lines(tmp_path: Path) -> None:
    shim = demo.write_shim(tmp_path, 1.0)
    line = demo.launch_line(shim, 30000, demo.SATURATING_PRESET)
    argv = shlex.split(line)
    assert argv[0].startswith("PYTHONPATH=")
    assert argv[2:4] == ["-m", "sglang.launch_server"]
    parsed = flags.parse_args(argv[4:])
    assert (parsed.mem_fraction_static, parsed.enable_hierarchical_cache, parsed.hicache_size) == (0.88, True, 48)
    for name, preset in demo.PRESETS.items():
        parsed = flags.parse_args(["--model-path", "/m", *demo.flag_args(preset)])
        assert parsed.mem_fraction_static == preset["mem-fraction-static"], name
    vetoed = demo.PRESETS[demo.VETOED_PRESETS[0]]
    assert fnmatch.fnmatch(str(vetoed["kv-cache-dtype"]), demo.VETOES[0]["value"])
    tables = demo.config_tables()
    assert set(tables["presets"]) == set(demo.PRESETS)  # type: ignore[arg-type]


def test_children_end_when_the_demo_process_dies_without_cleanup(tmp_path: Path) -> None:
    script = ("import pathlib, sys, time\nfrom kvwatch.simulator.demo import start_demo_world\n"
              "w = start_demo_world(pathlib.Path(sys.argv[1]), speed=4.0)\n"
              "while len(w._procs) < 2:\n    time.sleep(0.1)\n"
              "print(' '.join(str(p.pid) for p in w._procs), flush=True)\ntime.sleep(600)\n")
    parent = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], cwd=REPO, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert parent.stdout is not None
        children = [int(pid) for pid in parent.stdout.readline().split()]
        assert len(children) == 2  # the first server and the client
        time.sleep(3)
    finally:
        parent.kill()  # SIGKILL: no finally, no stop()
        parent.wait()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in children):
        time.sleep(0.5)
    alive = [pid for pid in children if Path(f"/proc/{pid}").exists()]
    for pid in alive:  # never leave them behind, even when the assertion below fails
        os.kill(pid, signal.SIGKILL)
    assert not alive


def test_launch_line_starts_a_simulated_sglang_that_ends_with_the_demo(tmp_path: Path) -> None:
    stand_in = subprocess.Popen(["sleep", "6"])  # plays the demo process
    shim = demo.write_shim(tmp_path, 30.0, watch_pid=stand_in.pid)
    line = demo.launch_line(shim, demo.free_port(), demo.SATURATING_PRESET)
    log = tmp_path / "sglang.log"
    with log.open("ab") as out:
        server = subprocess.Popen(["sh", "-c", line], stdout=out, stderr=subprocess.STDOUT)
    try:
        assert server.wait(timeout=90) == 137  # the shell reports SGLang's self-SIGKILL
    finally:
        stand_in.wait()
        if server.poll() is None:
            server.kill()
    text = log.read_text()
    assert "max_total_num_tokens=158983" in text
    assert "SIGTERM received." in text
    assert text.rstrip().endswith("Killed")
