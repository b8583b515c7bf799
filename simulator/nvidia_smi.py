"""A stand-in for `nvidia-smi --query-gpu=... --format=csv,noheader,nounits -lms N` for the demo,
on a machine with no GPU.

It answers only the query kvwatch's GPU collector sends, in nvidia-smi's own CSV shape, one line per
GPU every interval. The numbers follow the simulated server, not a random walk: memory is what SGLang
reserves (`mem_fraction_static` of an H200, from /server_info) while the server is up; utilisation
follows the KV tokens its running requests hold (/get_load against max_total_num_tokens).
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import json
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

from kvwatch.simulator.capacity import GpuSpec

IDLE_UTIL = 0
BUSY_FLOOR = 35  # a decode step keeps the SMs busy even with a few requests
MIB_PER_GIB = 1024


def fetch(url: str) -> Any:
    """The answer's JSON, or None when the server is down or went away mid-answer.

    A restart's SIGTERM can cut an answer short (IncompleteRead, BadStatusLine: http.client's own
    errors, not OSError); raising them ended the whole loop, and kvwatch's sampler then waited its
    restart delay with no GPU samples, a hole in the demo's GPU charts at every unlucky restart.
    """
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=1.0) as answer:
            return json.loads(answer.read())
    except (OSError, ValueError, urllib.error.URLError, http.client.HTTPException):
        return None


def gpu_lines(server: str, gpus: int, now: dt.datetime) -> list[str]:
    info, loads = fetch(f"{server}/server_info"), fetch(f"{server}/get_load")
    gpu = GpuSpec()
    total = round(gpu.total_gib * MIB_PER_GIB)
    if not isinstance(info, dict) or not isinstance(loads, list):
        used, util, power = 1, IDLE_UTIL, 75.0
    else:
        fraction = float(info.get("mem_fraction_static") or 0.85)
        capacity = max(1, int(info.get("max_total_num_tokens") or 1))
        running = sum(int(item.get("num_reqs", 0)) - int(item.get("num_waiting_reqs", 0)) for item in loads)
        held = sum(int(item.get("num_tokens", 0)) for item in loads) / capacity
        used = round(total * fraction)
        util = min(100, BUSY_FLOOR + round((100 - BUSY_FLOOR) * held)) if running else IDLE_UTIL
        power = 120.0 + 5.8 * util
    stamp = now.strftime("%Y/%m/%d %H:%M:%S.") + f"{now.microsecond // 1000:03d}"
    temp = 38 + util // 3
    return [f"{stamp}, {index}, {util}, {used}, {total}, {power:.2f}, {temp}" for index in range(gpus)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="nvidia-smi", description=__doc__)
    parser.add_argument("--query-gpu", required=True)
    parser.add_argument("--format", required=True)
    parser.add_argument("-lms", type=int, default=0, help="loop every N ms (0: once)")
    parser.add_argument("--sim-server", default="http://127.0.0.1:30000", help="the simulated server")
    parser.add_argument("--sim-gpus", type=int, default=8)
    args = parser.parse_args(argv)
    if args.format != "csv,noheader,nounits":
        parser.error("only --format=csv,noheader,nounits is simulated")
    while True:
        for line in gpu_lines(args.sim_server, args.sim_gpus, dt.datetime.now()):
            print(line)
        sys.stdout.flush()
        if args.lms <= 0:
            return 0
        time.sleep(args.lms / 1000)


if __name__ == "__main__":
    sys.exit(main())
