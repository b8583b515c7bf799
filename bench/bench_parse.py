"""Benchmark: `kvwatch parse --format parquet` next to SGLang's own log parser, on one generated log.

    python bench/bench_parse.py [--lines 1000000] [--repeat 2] [--baseline DIR]

The log is SGLang 0.5.5-0.5.8 shaped (the only decode format upstream's parser reads): decode,
prefill and uvicorn access lines, 2:1:1. Upstream's parser is `sglang/srt/debug_utils/log_parser.py`
from the released wheel, fetched with `pip download --no-deps sglang==0.5.23` into bench/scratch/
(never committed) and run the way it is written: whole file read, polars DataFrame, parquet written
with polars. It needs polars: `pip install -e '.[bench]'`. Each tool runs in its own process, one after
the other, `--repeat` times; wall time, CPU time (user+sys) and peak RSS come from that process.
kvwatch's peak RSS is also measured on a quarter of the log, to show memory does not grow with size.
`--baseline DIR`: another revision's checkout (e.g. `git archive main | tar -x -C DIR`) runs as a fourth
tool in the same rounds, imported through PYTHONPATH, so a change is measured against it side by side.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = ROOT / "bench" / "scratch"
SGLANG_VERSION = "0.5.23"
PARSER_MEMBER = "sglang/srt/debug_utils/log_parser.py"
RUNNER = """\
import sys
sys.path.insert(0, sys.argv[3])
import log_parser
with open(sys.argv[1]) as handle:
    frame = log_parser.parse(handle.read())
frame.write_parquet(sys.argv[2])
print(frame.height)
"""


# The same parse code without the CLI's start: app.cli imports every command (fastapi, pandas, ...).
PARSE_ONLY = """\
import argparse, sys
from pathlib import Path
sys.path.insert(0, ".")  # this checkout's app/, as `python -m kvwatch.app` from the root gets
from kvwatch.app.commands import parse
options = dict(source="auto", format="parquet", output=Path(sys.argv[2]), quiet=False, files=[Path(sys.argv[1])])
sys.exit(parse.run(argparse.Namespace(**options)))
"""


@dataclass
class Run:
    wall: float
    cpu: float
    peak_mib: float
    out: str


def generate(path: Path, lines: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    with path.open("w") as out:
        for i in range(lines):
            ts = f"2026-02-24 {10 + i // 36000 % 14:02d}:{i // 600 % 60:02d}:{i // 10 % 60:02d}"
            kind = i % 4
            if kind < 2:
                out.write(
                    f"[{ts} TP0] Decode batch, #running-req: {rng.randint(1, 150)}, "
                    f"#token: {rng.randint(1000, 376000)}, "
                    f"token usage: {rng.random():.2f}, cuda graph: {rng.random() < 0.9}, "
                    f"gen throughput (token/s): {rng.uniform(100, 1500):.2f}, #queue-req: {rng.randint(0, 99)}, \n"
                )
            elif kind == 2:
                out.write(
                    f"[{ts} TP0] Prefill batch, #new-seq: {rng.randint(1, 8)}, #new-token: {rng.randint(1, 8192)}, "
                    f"#cached-token: {rng.randint(0, 8192)}, token usage: {rng.random():.2f}, "
                    f"#running-req: {rng.randint(1, 150)}, #queue-req: {rng.randint(0, 99)}, \n"
                )
            else:
                port = rng.randint(30000, 60000)
                out.write(f'[{ts}] INFO:     127.0.0.1:{port} - "POST /generate HTTP/1.1" 200 OK\n')


def fetch_upstream_parser() -> Path:
    """SGLang's log_parser.py from the released wheel, extracted into bench/scratch/upstream/."""
    target = SCRATCH / "upstream" / "log_parser.py"
    if target.exists():
        return target.parent
    wheels = list(SCRATCH.glob(f"sglang-{SGLANG_VERSION}-*.whl"))
    if not wheels:
        pip = [sys.executable, "-m", "pip", "download", "--no-deps", f"sglang=={SGLANG_VERSION}", "-d", str(SCRATCH)]
        subprocess.run(pip, check=True)
        wheels = list(SCRATCH.glob(f"sglang-{SGLANG_VERSION}-*.whl"))
    with zipfile.ZipFile(wheels[0]) as wheel:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(wheel.read(PARSER_MEMBER))
    return target.parent


def measure(command: list[str], env: dict[str, str] | None = None) -> Run:
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    out = (process.stdout.read() if process.stdout else "") + (process.stderr.read() if process.stderr else "")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{command[:4]} failed:\n{out}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.strip())


def kvwatch(log: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "kvwatch.app", "parse", "--format", "parquet", "-o", str(out), str(log)]


def baseline_env(checkout: Path) -> dict[str, str]:
    """An environment importing `kvwatch` from another checkout: its top folders linked under one
    `kvwatch` namespace folder (the layout pyproject.toml's package-dir maps), put first on the path."""
    root = SCRATCH / "baseline-root" / "kvwatch"
    root.mkdir(parents=True, exist_ok=True)
    for folder in ("app", "collectors", "parsers", "simulator", "static"):
        link = root / folder
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(checkout.resolve() / folder)
    return {**os.environ, "PYTHONPATH": str(root.parent)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--baseline", type=Path, help="another revision's checkout, measured in the same rounds")
    args = parser.parse_args()
    try:
        import polars  # noqa: F401  (the upstream parser imports it; fail early and clearly)
    except ImportError:
        raise SystemExit("bench_parse needs polars: pip install -e '.[bench]'") from None
    SCRATCH.mkdir(parents=True, exist_ok=True)
    upstream = fetch_upstream_parser()
    (SCRATCH / "run_upstream.py").write_text(RUNNER)
    log, quarter = SCRATCH / f"server-{args.lines}.log", SCRATCH / f"server-{args.lines // 4}.log"
    for path, size in ((log, args.lines), (quarter, args.lines // 4)):
        if not path.exists():
            generate(path, size)
    (SCRATCH / "run_parse_only.py").write_text(PARSE_ONLY)
    runs: dict[str, list[Run]] = {"sglang": [], "kvwatch": [], "kvwatch parse code only": []}
    env = baseline_env(args.baseline) if args.baseline else None
    if env is not None:
        runs["kvwatch baseline"] = []
    for _ in range(args.repeat):
        if env is not None:
            runs["kvwatch baseline"].append(measure(kvwatch(log, SCRATCH / "kv-base.parquet"), env))
        upstream_cmd = [sys.executable, str(SCRATCH / "run_upstream.py"), str(log), str(SCRATCH / "up.parquet")]
        runs["sglang"].append(measure([*upstream_cmd, str(upstream)]))
        runs["kvwatch"].append(measure(kvwatch(log, SCRATCH / "kv.parquet")))
        only = [sys.executable, str(SCRATCH / "run_parse_only.py"), str(log), str(SCRATCH / "kv-only.parquet")]
        runs["kvwatch parse code only"].append(measure(only))
    small = measure(kvwatch(quarter, SCRATCH / "kv-quarter.parquet"))
    report(args, log, runs, small)
    return 0


def report(args: argparse.Namespace, log: Path, runs: dict[str, list[Run]], small: Run) -> None:
    def median(tool: str, field: str) -> float:
        return statistics.median(getattr(run, field) for run in runs[tool])

    size_mib = log.stat().st_size / 2**20
    print(f"log: {args.lines} lines, {size_mib:.0f} MiB (decode:prefill:access 2:1:1); {args.repeat} runs each")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print("| tool | wall s (median) | CPU s (median) | peak RSS MiB | output |")
    print("|---|---|---|---|---|")
    for tool in runs:
        last = runs[tool][-1].out.splitlines()[-1].split("): ")[-1] if runs[tool][-1].out else ""
        print(
            f"| {tool} | {median(tool, 'wall'):.2f} | {median(tool, 'cpu'):.2f} | "
            f"{max(r.peak_mib for r in runs[tool]):.0f} | {last} |"
        )
    print(f"| kvwatch, {args.lines // 4} lines | {small.wall:.2f} | {small.cpu:.2f} | {small.peak_mib:.0f} | |")
    for tool in [name for name in runs if name != "sglang"]:
        wall = median("sglang", "wall") / median(tool, "wall")
        cpu = median("sglang", "cpu") / median(tool, "cpu")
        print(f"ratio sglang / {tool}: wall {wall:.2f}x, CPU {cpu:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
