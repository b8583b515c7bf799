"""Catch-up speed on a large existing file: raw transport reads and the full Tail (lines).

usage: PYTHONPATH=. python bench/catchup.py [RAW_MB] [TAIL_MB]
RAW_MB (default 1024): bytes pulled through SshTransport.read in the Tail's 8 MiB chunks (the
streaming exec `tail -c +N` cursor) and, for contrast, through SFTP in 256 KiB reads.
TAIL_MB (default 256): Tail.poll() until caught up, short SGLang-like lines (the worst case:
per-line cost dominates) and 16 KiB JSONL-like lines (outputs), local and over SSH.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from bench._sshd import throwaway_sshd
from collectors.base import Transport
from collectors.local import LocalTransport
from collectors.ssh import SFTP_READ_MAX
from collectors.tail import READ_CHUNK, Tail
from tests.fixtures.sshd import Sshd

SGLANG = (b"[2026-02-24 12:49:14 DP0 TP0] Decode batch. #running-req: 233, #token: 180000, "
          b"token usage: 0.91, cuda graph: True, gen throughput (token/s): 4321.05, #queue-req: 12\n")
JSONL = b'{"id": 1, "text": "' + b"x" * 16_000 + b'"}\n'


def make(path: Path, line: bytes, mb: int) -> int:
    block = line * max(1, (4 << 20) // len(line))
    with open(path, "wb") as handle:
        while handle.tell() < mb << 20:
            handle.write(block)
    return path.stat().st_size


def raw_read(transport: Transport, path: Path, size: int, chunk: int) -> dict[str, object]:
    t0, c0 = time.perf_counter(), time.process_time()
    pos = 0
    while pos < size:
        got = transport.read(str(path), pos, min(chunk, size - pos))
        if not got:
            break
        pos += len(got)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"what": f"raw read, {chunk >> 10} KiB requests", "mb": round(pos / 1e6), "s": round(wall, 2),
            "mb_s": round(pos / 1e6 / wall), "client_cpu_s": round(cpu, 2)}


def openssh_cat(server: Sshd, path: Path, size: int) -> dict[str, object]:
    """The ceiling of this box: OpenSSH's own client streaming the same file."""
    argv = ["ssh", "-q", "-i", server.key_path, "-p", str(server.port), "-o", "BatchMode=yes",
            "-o", f"UserKnownHostsFile={server.known_hosts_path}", f"{server.user}@127.0.0.1", "cat", str(path)]
    t0 = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.PIPE, check=True)
    wall = time.perf_counter() - t0
    assert len(done.stdout) == size
    return {"what": "OpenSSH client `ssh cat` (baseline)", "mb": round(size / 1e6), "s": round(wall, 2),
            "mb_s": round(size / 1e6 / wall)}


def tail_all(transport: Transport, path: Path, size: int, label: str) -> dict[str, object]:
    tail = Tail(transport, str(path), "bench")
    lines = 0
    t0, c0 = time.perf_counter(), time.process_time()
    while True:
        got = tail.poll()
        lines += len(got)
        if not got and not tail.behind:
            break
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert tail.state is not None and tail.state.offset == size
    return {"what": f"Tail.poll, {label}", "mb": round(size / 1e6), "lines": lines, "s": round(wall, 2),
            "mb_s": round(size / 1e6 / wall), "client_cpu_s": round(cpu, 2),
            "mb_per_cpu_s": round(size / 1e6 / cpu)}


def main() -> None:
    raw_mb = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    tail_mb = int(sys.argv[2]) if len(sys.argv) > 2 else 256
    with throwaway_sshd() as server:
        remote = server.connect()
        try:
            big = server.dir / "big.log"
            size = make(big, SGLANG, raw_mb)
            print(json.dumps(raw_read(remote, big, size, READ_CHUNK)), flush=True)
            print(json.dumps(openssh_cat(server, big, size)), flush=True)
            print(json.dumps(raw_read(remote, big, min(size, 64 << 20), SFTP_READ_MAX)), flush=True)
            big.unlink()
            for name, line in (("short SGLang lines", SGLANG), ("16 KiB JSONL lines", JSONL)):
                path = server.dir / "tail.log"
                size = make(path, line, tail_mb)
                for tname, transport in (("local", LocalTransport()), ("ssh", remote)):
                    print(json.dumps(tail_all(transport, path, size, f"{name}, {tname}")), flush=True)
                path.unlink()
        finally:
            remote.close()


if __name__ == "__main__":
    main()
