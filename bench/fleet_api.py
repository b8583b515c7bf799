"""GET /api/fleet's cost by fleet size, side by side in one run: N hosts, each with 5 minutes of stored
samples (one SQLite store, no collector), the answer timed cold (verdicts and sparklines read) and warm
(within their 10 s / 5 s keep), in-process (no HTTP), the median of a few answers.

usage: PYTHONPATH=. python bench/fleet_api.py [SIZES...]   (default 32 64 256)
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from kvwatch.app.api.fleet import fleet_answer
from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.services import Services
from kvwatch.app.store.base import Batch, Sample
from kvwatch.app.store.sqlite import SqliteStore

METRICS = (("gen_throughput", 900.0), ("token_usage", 0.8), ("running_req", 60.0), ("queue_req", 10.0))


def services_with(hosts: int, root: Path) -> Services:
    configs = tuple(HostConfig(name=f"node{i:03d}", ssh="local", server_log=str(root / "none.log"),
                               target_completions=10_000) for i in range(hosts))
    services = Services(Config(server=ServerConfig(data_dir=str(root)), hosts=configs),
                        SqliteStore(str(root / "kvwatch.db")))
    now = time.time()
    for host in configs:
        samples = [Sample(m, "", now - 300 + i, v) for i in range(0, 300, 2) for m, v in METRICS]
        samples += [Sample("completions", "", now - 300 + i, float(i)) for i in range(0, 300, 2)]
        services.store.commit(Batch(host.name, "server_log", "/l", samples=samples))
    return services


def timed(services: Services) -> float:
    start = time.perf_counter()
    fleet_answer(services)
    return time.perf_counter() - start


def main(sizes: list[int]) -> None:
    print(f"{'hosts':>6} {'cold s':>8} {'warm s':>8} {'warm ms/host':>13}")
    for size in sizes:
        with tempfile.TemporaryDirectory() as root:
            services = services_with(size, Path(root))
            cold = timed(services)
            warm = statistics.median(timed(services) for _ in range(3))
            services.store.close()
        print(f"{size:>6} {cold:>8.2f} {warm:>8.2f} {1000 * warm / size:>13.1f}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [32, 64, 256])
