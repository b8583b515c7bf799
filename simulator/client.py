"""`python -m kvwatch.simulator.client`: the generation client of the run, against a (simulated) SGLang server.

It works through datasets one after another, keeps `--concurrency` requests in flight, appends each
response to `<workdir>/prepared/<dataset>/raw_responses.jsonl`, resumes after the lines already there,
and prints tqdm-style progress to stdout. Redirected to a file, Python block-buffers stdout, so the
client log lags (or stays empty) while the outputs grow, as in the run; `--flush` flushes every line.
Failed requests (server restarting) are retried with a pause, and the failure is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kvwatch.simulator import lifeline
from kvwatch.simulator.workload import DATASETS, Dataset, OutputSink, sample_lengths, tqdm_line

CHARS_PER_TOKEN = 4
RETRY_PAUSE_S = 0.5


def parse_args(argv: list[str]) -> argparse.Namespace:
    names = ",".join(ds.name for ds in DATASETS)
    p = argparse.ArgumentParser(prog="kvwatch.simulator.client", description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:30000", help="server base URL (loopback)")
    p.add_argument("--workdir", type=Path, required=True, help="prepared/<dataset>/ goes under this")
    p.add_argument("--datasets", default=names, help=f"comma-separated, in order (default {names})")
    p.add_argument("--limit", type=int, default=None, help="at most this many requests per dataset")
    p.add_argument("--concurrency", type=int, default=150)
    p.add_argument("--endpoint", choices=("generate", "chat"), default="generate")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--flush", action="store_true", help="flush stdout after every progress line")
    p.add_argument("--progress-every", type=float, default=1.0, help="seconds between progress lines")
    p.add_argument("--parent-pid", type=int, default=None, help="die (SIGTERM) once this is not the parent")
    return p.parse_args(argv)


def pick_datasets(names: str) -> list[Dataset]:
    known = {ds.name: ds for ds in DATASETS}
    unknown = [n for n in names.split(",") if n and n not in known]
    if unknown:
        raise SystemExit(f"kvwatch.simulator.client: error: unknown dataset {unknown[0]!r} (known: {', '.join(known)})")
    return [known[n] for n in names.split(",") if n]


class Progress:
    """tqdm's line, printed at most every `every` seconds and at the end."""

    def __init__(self, ds: Dataset, total: int, done: int, every: float, flush: bool) -> None:
        self.ds, self.total, self.n = ds, total, done
        self.every, self.flush = every, flush
        self.start = time.monotonic()
        self.last = 0.0
        self.lock = threading.Lock()

    def update(self) -> None:
        with self.lock:
            self.n += 1
            now = time.monotonic()
            if now - self.last >= self.every or self.n >= self.total:
                self.last = now
                self.print()

    def print(self) -> None:
        say(tqdm_line(self.ds.name, self.n, self.total, time.monotonic() - self.start), self.flush)


def say(text: str, flush: bool) -> None:
    sys.stdout.write(text + "\n")
    if flush:
        sys.stdout.flush()


class Client:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.sink = OutputSink(args.workdir)
        self.sink_lock = threading.Lock()
        self.stop = threading.Event()

    def request(self, ds: Dataset, index: int, rng: random.Random) -> dict[str, Any]:
        prompt, response = sample_lengths(rng, ds)
        text = ("x" * (prompt * CHARS_PER_TOKEN - 1)) + "\n"
        if self.args.endpoint == "generate":
            path = "/generate"
            body: dict[str, Any] = {"text": text, "sampling_params": {"max_new_tokens": ds.max_new_tokens,
                                                                       "temperature": 0.6}}
        else:
            path = "/v1/chat/completions"
            body = {"model": "default", "messages": [{"role": "user", "content": text}],
                    "max_tokens": ds.max_new_tokens, "temperature": 0.6}
        req = urllib.request.Request(self.args.url + path, data=json.dumps(body).encode(), headers={
            "Content-Type": "application/json", "X-Sim-Output-Tokens": str(response)})
        with urllib.request.urlopen(req, timeout=3600) as answer:
            return dict(json.loads(answer.read()))

    def one(self, ds: Dataset, index: int, progress: Progress) -> None:
        rng = random.Random(f"{self.args.seed}:{ds.name}:{index}")
        while not self.stop.is_set():
            try:
                result = self.request(ds, index, rng)
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as exc:
                say(f"[{ds.name} #{index}] request failed: {exc}; retrying in {RETRY_PAUSE_S:.0f}s",
                    self.args.flush)
                self.stop.wait(RETRY_PAUSE_S)
                rng = random.Random(f"{self.args.seed}:{ds.name}:{index}")
        else:
            return
        text = result.get("text") or result["choices"][0]["message"]["content"]
        usage = result.get("meta_info") or result.get("usage") or {}
        with self.sink_lock:
            self.sink.append(ds.name, {"id": f"{ds.name}-{index}", "dataset": ds.name, "response": text,
                                       "usage": {"prompt_tokens": usage.get("prompt_tokens"),
                                                 "completion_tokens": usage.get("completion_tokens")}})
        progress.update()

    def run_dataset(self, ds: Dataset) -> None:
        total = min(ds.count, self.args.limit) if self.args.limit else ds.count
        path = self.args.workdir / "prepared" / ds.name / "raw_responses.jsonl"
        done = sum(1 for _ in path.open(encoding="utf-8")) if path.exists() else 0
        if done >= total:
            return
        progress = Progress(ds, total, done, self.args.progress_every, self.args.flush)
        progress.print()
        with ThreadPoolExecutor(max_workers=self.args.concurrency) as pool:
            for index in range(done, total):
                pool.submit(self.one, ds, index, progress)

    def run(self, datasets: list[Dataset]) -> None:
        try:
            for ds in datasets:
                say(f"Processing {ds.name} ...", self.args.flush)
                self.run_dataset(ds)
        finally:
            self.sink.close()
            sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.parent_pid is not None:
        lifeline.watch_parent(args.parent_pid, lambda: os.kill(os.getpid(), signal.SIGTERM))
    client = Client(args)
    try:
        client.run(pick_datasets(args.datasets))
    except KeyboardInterrupt:
        client.stop.set()
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
