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

SPEED = 8.0  # the 15-minute story in under two minutes
STORY_S = sum(run_s or 0.0 for _, run_s in demo.STORY)


def runs_of(records: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The decode records of each server start (split at each capacity line)."""
    runs: list[list[dict[str, Any]]] = []
    for record in records:
        if record["kind"] == "capacity" and (not runs or runs[-1]):
            runs.append([])
        elif record["kind"] == "decode" and runs:
            runs[-1].append(record)
    return runs


def test_story_is_the_campaign_on_the_real_clock(tmp_path: Path) -> None:
    wall_start = time.time()
    world = demo.start_demo_world(tmp_path, speed=SPEED)
    try:
        deadline = time.monotonic() + STORY_S / SPEED + 90
        records: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            time.sleep(2)
            records = parse_log(world.server_log)
            if sum(r["kind"] == "capacity" for r in records) == len(demo.STORY) and len(runs_of(records)[-1]) > 3:
                break
        read_at = time.time()
        capacities = [r["max_total_num_tokens"] for r in records if r["kind"] == "capacity"]
        assert capacities == [115980, 158983, 375304, 158983]  # default, 0.88 + hicache, fp8, 0.88 again
        events = [r["event"] for r in records if r["kind"] == "event"]
        assert events.count("ready") == 4 and "retract" in events
        # Real clock: nothing before the demo started, nothing ahead of now, stamps in order.
        stamps = [datetime.fromisoformat(r["ts"]).timestamp() for r in records if "ts" in r]
        assert min(stamps) >= int(wall_start) and max(stamps) <= read_at + 1
        assert stamps == sorted(stamps)
        default, first_088, fp8, _ = runs_of(records)
        saturated = [r for r in default if r["token_usage"] > 0.95]
        assert saturated and max(r["queue_req"] for r in default) > 30
        # Within the first minute of story time (the page's contract needs the alert by 60 s).
        assert datetime.fromisoformat(saturated[0]["ts"]).timestamp() - wall_start < 60 / SPEED + 3
        assert max(r["token_usage"] for r in first_088) > 0.95
        late = fp8[len(fp8) // 2:]
        assert max(r["queue_req"] for r in late) == 0 and min(r["running_req"] for r in late) >= 140
        outputs = glob.glob(world.outputs_glob)
        assert outputs and sum(len(Path(p).read_text().splitlines()) for p in outputs) > 0
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
