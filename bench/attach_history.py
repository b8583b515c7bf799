"""Attach to a run three days in: `kvwatch serve` on a 1M-line DP-attention log, until its history is answered.

usage: PYTHONPATH=. python bench/attach_history.py [--lines 1000000] [--baseline REF] [--postgres]

One run, one sshd, one generated log (SGLang 0.5.x shape with `--enable-dp-attention --dp-size 4`:
each step one decode line per DP rank, a prefill line and an access line), and side by side:
- OpenSSH's `ssh host cat file` (the transfer floor);
- SGLang's bundled `log_parser.parse` (from `.venv-sglang`) on the local copy, run as bench_parse.py
  runs it (its own process, whole file read, polars);
- `kvwatch serve` (a subprocess, a kvwatch.toml naming the host over that sshd) from its start until
  `/api/series?metric=gen_throughput` answers the file's last decode stamp; its peak RSS from wait4.
  `--baseline REF` runs the same for a git ref (exported with `git archive` into bench/scratch/),
  after this checkout's code, in the same run. `--postgres` adds the same on a temp PostgreSQL cluster.
While kvwatch catches up, `/api/hosts` is polled once a second; its catch-up fields (bytes read of
bytes there, lines per second, time left) are printed as they were seen.
Ratio reported: kvwatch seconds / (ssh cat seconds + SGLang parser seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench._sshd import throwaway_sshd
from bench.bench_parse import measure
from tests.fixtures.sshd import Sshd

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = ROOT / "bench" / "scratch"
DP = 4
PARSER_DIR = ROOT / ".venv-sglang/lib/python3.11/site-packages/sglang/srt/debug_utils"
RUNNER = """\
import sys
sys.path.insert(0, sys.argv[2])
import log_parser
with open(sys.argv[1]) as handle:
    frame = log_parser.parse(handle.read())
print(frame.height)
"""
START = 1771930154  # 2026-02-24T10:49:14Z; one step every 1.3 s: 1M lines is about 3 days


def stamp(step: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(START + step * 13 // 10))


def generate_dp(path: Path, lines: int, seed: int = 11) -> float:
    """The log; returns the epoch of its last decode line."""
    rng = random.Random(seed)
    step = written = 0
    with path.open("w") as out:
        while written < lines:
            ts = stamp(step)
            for rank in range(DP):
                out.write(f"[{ts} DP{rank} TP{rank}] Decode batch, #running-req: {rng.randint(1, 150)}, "
                          f"#token: {rng.randint(1000, 376000)}, token usage: {rng.random():.2f}, "
                          f"cuda graph: {rng.random() < 0.9}, gen throughput (token/s): "
                          f"{rng.uniform(100, 1500):.2f}, #queue-req: {rng.randint(0, 99)}, \n")
            rank = rng.randrange(DP)
            out.write(f"[{ts} DP{rank} TP{rank}] Prefill batch, #new-seq: {rng.randint(1, 8)}, "
                      f"#new-token: {rng.randint(1, 8192)}, #cached-token: {rng.randint(0, 8192)}, "
                      f"token usage: {rng.random():.2f}, #running-req: {rng.randint(1, 150)}, "
                      f"#queue-req: {rng.randint(0, 99)}, \n")
            out.write(f'[{ts}] INFO:     127.0.0.1:{rng.randint(30000, 60000)} - "POST /generate HTTP/1.1" 200 OK\n')
            written += DP + 2
            step += 1
    return float(START + (step - 1) * 13 // 10)


def load() -> float:
    return round(os.getloadavg()[0], 1)


def ssh_cat(server: Sshd, path: Path) -> float:
    argv = ["ssh", "-q", "-i", server.key_path, "-p", str(server.port), "-o", "BatchMode=yes",
            "-o", f"UserKnownHostsFile={server.known_hosts_path}", f"{server.user}@{server.host}", "cat", str(path)]
    t0 = time.perf_counter()
    with subprocess.Popen(argv, stdout=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        got = sum(len(block) for block in iter(lambda: proc.stdout.read(1 << 20), b""))  # type: ignore[union-attr]
    assert got == path.stat().st_size
    return time.perf_counter() - t0


def sglang_parser(path: Path) -> tuple[float, float, float]:
    """(wall s, peak RSS MiB, CPU s) of SGLang's parser in its own process."""
    script = SCRATCH / "run_sglang_log_parser.py"
    script.write_text(RUNNER)
    run = measure([sys.executable, str(script), str(path), str(PARSER_DIR)])
    return run.wall, run.peak_mib, run.cpu


def export_ref(ref: str) -> Path:
    """`git archive REF` under bench/scratch/, with a `kvwatch/` folder of links as the installed root."""
    sha = subprocess.run(["git", "rev-parse", ref], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()
    tree = SCRATCH / f"ref-{sha[:10]}"
    if not tree.exists():
        tree.mkdir(parents=True)
        archive = subprocess.Popen(["git", "archive", sha], cwd=ROOT, stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(tree)], stdin=archive.stdout, check=True)
        archive.wait()
        (tree / "kvwatch").mkdir()
        for name in ("app", "collectors", "parsers", "simulator", "static"):
            (tree / "kvwatch" / name).symlink_to(tree / name)
    return tree


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def get(url: str) -> object:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return json.loads(answer.read())


def kvwatch_serve(label: str, code: Path | None, server: Sshd, log: Path, last_t: float,
                  database: str) -> dict[str, object]:
    work = Path(tempfile.mkdtemp(prefix="kvwatch-attach-"))
    port = free_port()
    (work / "kvwatch.toml").write_text(
        f'[server]\nhost = "127.0.0.1"\nport = {port}\ndatabase = "{database}"\n\n'
        f'[[hosts]]\nname = "h"\nssh = "{server.spec}"\nidentity_file = "{server.key_path}"\n'
        f'known_hosts = "{server.known_hosts_path}"\nserver_log = "{log}"\ntimezone = "UTC"\n')
    env = dict(os.environ, PYTHONPATH=f"{code}:{ROOT}" if code else str(ROOT))
    l0 = load()
    t0 = time.perf_counter()
    with open(work / "serve.err", "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "kvwatch.app", "serve", "--config", str(work / "kvwatch.toml")],
                                cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=err)
    base = f"http://127.0.0.1:{port}"
    sampler = RssSampler(proc.pid, t0)
    seen: list[dict[str, object]] = []
    first_points = None
    try:
        http_up, reading = start_phases(base, proc)
        polls = 0
        while True:
            # The end is looked for 4 times a second (the answer's resolution); progress once a second.
            time.sleep(0.25)
            polls += 1
            if proc.poll() is not None:
                raise SystemExit(f"{label}: kvwatch serve exited: {(work / 'serve.err').read_text()[-2000:]}")
            try:
                last = get(f"{base}/api/series?host=h&metric=gen_throughput&since={last_t - 0.5}")
                done = isinstance(last, dict) and bool(last["points"]) and last["points"][-1][0] >= last_t
                wall = time.perf_counter() - t0
                if polls % 4 and not done:
                    continue
                answer = get(f"{base}/api/series?host=h&metric=gen_throughput&max_points=500")
                hosts = get(f"{base}/api/hosts")
            except OSError:
                continue
            points = answer["points"] if isinstance(answer, dict) else []
            if points and first_points is None:
                first_points = time.perf_counter() - t0
            seen.append({**progress_fields(hosts, time.perf_counter() - t0), "rss_mib": rss_mib(proc.pid)})
            if done:
                break
    finally:
        proc.terminate()
        _, _, usage = os.wait4(proc.pid, 0)
        sampler.stop()
        shutil.rmtree(work, ignore_errors=True)
    # CPU (user + sys) of the serve process, from its start to just after the history was answered.
    cpu = usage.ru_utime + usage.ru_stime
    return {"what": label, "s": round(wall, 2), "cpu_s": round(cpu, 2),
            "first_points_s": first_points and round(first_points, 1),
            "http_up_s": round(http_up - t0, 2), "first_bytes_read_s": round(reading - t0, 2),
            "peak_rss_mib": round(usage.ru_maxrss / 1024), "load": f"{l0}-{load()}",
            "progress_seen": seen[:: max(1, len(seen) // 6)],
            "rss_mib_each_s": [row["rss_mib"] for row in seen],
            "sampled_peak": {"rss_mib": sampler.peak, "at_s": sampler.peak_at, "history_answered_s": round(wall, 1)}}


def start_phases(base: str, proc: subprocess.Popen[bytes]) -> tuple[float, float]:
    """When `/api/hosts` first answered and when it first showed bytes of the log read (20 ms polls)."""
    http_up = None
    while proc.poll() is None:
        try:
            hosts = get(f"{base}/api/hosts")
        except OSError:
            time.sleep(0.02)
            continue
        now = time.perf_counter()
        http_up = http_up or now
        if progress_fields(hosts, 0.0).get("bytes_read"):
            return http_up, now
        time.sleep(0.02)
    raise SystemExit("kvwatch serve exited before reading")


class RssSampler:
    """RSS every 20 ms in a thread: when the peak happens (catch-up, or the first wide query)."""

    def __init__(self, pid: int, t0: float) -> None:
        self.pid, self.t0, self.peak, self.peak_at = pid, t0, 0, 0.0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(0.02):
            rss = rss_mib(self.pid)
            if rss is not None and rss > self.peak:
                self.peak, self.peak_at = rss, round(time.perf_counter() - self.t0, 2)

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def rss_mib(pid: int) -> int | None:
    """The process's resident size now (the peak alone does not say which phase it belongs to)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            kb = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return None
    return round(kb / 1024)


def progress_fields(hosts: object, at: float) -> dict[str, object]:
    fields = ("bytes_read", "bytes_total", "lines_per_s", "eta_s")
    out: dict[str, object] = {"at_s": round(at, 1)}
    for host in hosts if isinstance(hosts, list) else []:
        sources = host.get("sources", {}) if isinstance(host, dict) else {}
        source = sources.get("server_log") if isinstance(sources, dict) else None
        if isinstance(source, dict):
            out.update({k: source.get(k) for k in fields if k in source})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--baseline", help="a git ref to run the same scenario for, first")
    parser.add_argument("--postgres", action="store_true", help="also on a temp PostgreSQL cluster")
    parser.add_argument("--skip-current", action="store_true")
    args = parser.parse_args()
    SCRATCH.mkdir(exist_ok=True)
    with throwaway_sshd() as server:
        log = server.dir / "sglang_inference.log"
        last_t = generate_dp(log, args.lines)
        size = log.stat().st_size
        print(json.dumps({"lines": args.lines, "mib": round(size / 2**20), "cpus": os.cpu_count(), "load": load()}))
        cat = ssh_cat(server, log)
        upstream, upstream_rss, upstream_cpu = sglang_parser(log)
        floor = cat + upstream
        print(json.dumps({"ssh_cat_s": round(cat, 2), "sglang_parser_s": round(upstream, 2),
                          "sglang_parser_cpu_s": round(upstream_cpu, 2),
                          "sglang_parser_rss_mib": round(upstream_rss), "floor_s": round(floor, 2)}), flush=True)
        runs: list[tuple[str, Path | None, str]] = []
        if not args.skip_current:
            runs.append(("kvwatch this checkout, SQLite", None, "sqlite"))
            if args.postgres:
                runs.append(("kvwatch this checkout, PostgreSQL", None, "postgres"))
        if args.baseline:
            runs.append((f"kvwatch {args.baseline}, SQLite", export_ref(args.baseline), "sqlite"))
        for label, code, kind in runs:
            row = run_one(label, code, server, log, last_t, kind)
            row["ratio"] = round(float(row["s"]) / floor, 1)  # type: ignore[arg-type]
            print(json.dumps(row), flush=True)
        print(json.dumps({"ssh_cat_s_after": round(ssh_cat(server, log), 2), "load": load()}))


def run_one(label: str, code: Path | None, server: Sshd, log: Path, last_t: float, kind: str) -> dict[str, object]:
    if kind == "sqlite":
        db = Path(tempfile.mkdtemp(prefix="kvwatch-attach-db-"))
        try:
            return kvwatch_serve(label, code, server, log, last_t, str(db / "kvwatch.db"))
        finally:
            shutil.rmtree(db, ignore_errors=True)
    with temp_cluster() as url:
        return kvwatch_serve(label, code, server, log, last_t, url)


@contextmanager
def temp_cluster() -> Iterator[str]:
    """A throwaway PostgreSQL cluster, the test fixture's recipe (tests/fixtures/postgres.py)."""
    from tests.fixtures.postgres import SERVER_OPTIONS, _as_postgres, _initdb_path

    bindir = os.path.dirname(_initdb_path())
    root = tempfile.mkdtemp(prefix="kvwatch-bench-pg-")
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    os.chmod(root, 0o700)
    data, port = os.path.join(root, "data"), free_port()
    subprocess.run(_as_postgres(f"{bindir}/initdb", "-D", data, "-U", "postgres", "--auth=trust", "--no-sync",
                                "-E", "UTF8", "--no-locale"), check=True, capture_output=True)
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {root} {SERVER_OPTIONS}"
    subprocess.run(_as_postgres(f"{bindir}/pg_ctl", "-D", data, "-l", f"{root}/server.log", "-w", "-o", options,
                                "start"), check=True, capture_output=True)
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(_as_postgres(f"{bindir}/pg_ctl", "-D", data, "-m", "fast", "-w", "stop"),
                       check=False, capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
