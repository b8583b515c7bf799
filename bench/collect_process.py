"""The 64-host footprint of the process a person runs: `kvwatch collect --config kvwatch.toml`.

bench/collect_fleet.py builds the host collectors inside the benchmark, which leaves out what the
command itself loads (the CLI, the config, the web app's modules that `kvwatch collect` and `kvwatch
serve` import). This one writes a kvwatch.toml with N [[hosts]] (each following a server log, an
output-file glob and the GPU loop with a fake nvidia-smi, over one real sshd) and runs the command
as a subprocess; bench/_appender.py appends to every host's files as for collect_fleet.py. After a warm-up
it reads the process's RSS and CPU from /proc, then counts the hosts that stored rows.

usage: PYTHONPATH=. python bench/collect_process.py [HOSTS] [SECONDS] [TREE ...]
Each TREE is a checkout to run the command from (default: this one); several trees run one after
another in the same invocation, so their figures are side by side under the same load.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from bench._appender import appending
from bench._collect import install_fake_nvidia_smi, proc_cpu, status_kb, tree_cpu
from bench._sshd import throwaway_sshd
from bench.collect_fleet import host_dirs
from tests.fixtures.sshd import Sshd

WARM_UP_S = 40.0  # 64 key exchanges at once on 2 cores, then every watch stream started


def write_config(server: Sshd, dirs: list[Path], db: Path) -> Path:
    lines = ["[server]", f'database = "{db}"', ""]
    for i, d in enumerate(dirs):
        lines += ["[[hosts]]", f'name = "h{i}"', f'ssh = "{server.spec}"',
                  f'identity_file = "{server.key_path}"', f'known_hosts = "{server.known_hosts_path}"',
                  f'server_log = "{d / "server.log"}"', f'outputs = ["{d / "*" / "raw_responses.jsonl"}"]',
                  "gpu = true", ""]
    path = db.parent / "kvwatch.toml"
    path.write_text("\n".join(lines))
    return path


def hosts_with_rows(db: Path) -> int:
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        return int(conn.execute("SELECT COUNT(DISTINCT host) FROM samples").fetchone()[0])


@contextmanager
def fleet_on_sshd(hosts: int) -> Iterator[tuple[Sshd, list[Path], Path, Path]]:
    """A throwaway sshd with `hosts` host folders and a fake nvidia-smi; the store's path and the
    kvwatch.toml naming them h0, h1, ..."""
    with throwaway_sshd() as server:
        install_fake_nvidia_smi(server)
        dirs = host_dirs(server, hosts)
        db = server.dir / "kvwatch.db"
        yield server, dirs, db, write_config(server, dirs, db)


def measure(tree: Path, hosts: int, seconds: float) -> dict[str, object]:
    with fleet_on_sshd(hosts) as (server, dirs, db, config):
        env = {**os.environ, "PYTHONPATH": str(tree)}
        proc = subprocess.Popen([sys.executable, "-m", "kvwatch.app", "collect", "--config", str(config)],
                                cwd=server.dir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        appender = appending(dirs, server.dir / "appended.txt")
        appender.__enter__()
        try:
            time.sleep(WARM_UP_S)
            if proc.poll() is not None:
                said = proc.stderr.read() if proc.stderr else b""
                said = proc.stderr.read() if proc.stderr else b""
                raise SystemExit(f"{tree}: kvwatch collect exited {proc.returncode}: {said!r}")
            cpu0, sshd0, t0 = proc_cpu(proc.pid), tree_cpu(server.proc.pid), time.monotonic()
            time.sleep(seconds)
            wall = time.monotonic() - t0
            cpu, sshd_cpu = proc_cpu(proc.pid) - cpu0, tree_cpu(server.proc.pid) - sshd0
            rss, peak = status_kb("VmRSS:", proc.pid), status_kb("VmHWM:", proc.pid)
            threads = status_kb("Threads:", proc.pid)
        finally:
            appender.__exit__(None, None, None)
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        return {
            "tree": str(tree), "hosts": hosts, "seconds": round(wall, 1), "threads": threads,
            "rss_mb": round(rss / 1024), "peak_rss_mb": round(peak / 1024),
            "kvwatch_cpu_pct_of_one_core": round(100 * cpu / wall, 1),
            "hosts_with_rows": hosts_with_rows(db), "exit": proc.returncode,
            "sshd_side_cpu_pct_of_one_core": round(100 * sshd_cpu / wall, 1),
            "load_avg": round(os.getloadavg()[0], 1),
        }


def main() -> None:
    hosts = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 30
    trees = [Path(t).resolve() for t in sys.argv[3:]] or [Path.cwd()]
    for tree in trees:
        print(json.dumps(measure(tree, hosts, seconds)), flush=True)


if __name__ == "__main__":
    main()
