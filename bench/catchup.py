"""Catch-up speed on a large existing file: plain vs gzip streams vs OpenSSH, then the full Tail.

usage: PYTHONPATH=. python bench/catchup.py [--mb 1024] [--tail-mb 256] [--link RATE]

Raw rows (one run, one after the other, same file): `SshTransport.read` in the Tail's 8 MiB chunks
with the catch-up stream forced plain, forced through `gzip -1`, and `auto` (kvwatch's default: it
times both on the connection and keeps the faster); the plain stream with paramiko's default
aes128-ctr + hmac-sha2-256 (main before this change: AES-GCM is now preferred); OpenSSH's own
`ssh host cat file`; SFTP in 256 KiB requests. Each row: MB/s of file bytes, client CPU seconds,
bytes on the wire (gzip), load average.

The log is realistic for compression: SGLang decode/prefill/access lines with random numbers from
bench/bench_parse.py's generator, a fresh seed per 1M lines (cached in bench/scratch/, not committed).
--link RATE puts sshd in a network namespace behind a veth shaped with `tc tbf rate RATE` (root and
iproute2 needed), e.g. 1gbit or 200mbit, to see which stream wins when the link is the limit.
TAIL_MB: Tail.poll() until caught up, short SGLang-like lines and 16 KiB JSONL lines, local and SSH.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import paramiko

from bench._sshd import throwaway_sshd
from bench.bench_parse import generate
from kvwatch.collectors.base import Transport
from kvwatch.collectors.local import LocalTransport
from kvwatch.collectors.ssh.catchup import Compression
from kvwatch.collectors.ssh.transport import SFTP_READ_MAX, GcmFirstTransport, SshOptions, SshTransport
from kvwatch.collectors.tail import READ_CHUNK, Tail
from tests.fixtures.sshd import Sshd

SCRATCH = Path(__file__).resolve().parent / "scratch"
SGLANG = (b"[2026-02-24 12:49:14 DP0 TP0] Decode batch. #running-req: 233, #token: 180000, "
          b"token usage: 0.91, cuda graph: True, gen throughput (token/s): 4321.05, #queue-req: 12\n")
JSONL = b'{"id": 1, "text": "' + b"x" * 16_000 + b'"}\n'


def realistic_log(mb: int) -> Path:
    """~138 MB per million generated lines, each million with its own seed: nothing repeats."""
    path = SCRATCH / f"catchup-{mb}.log"
    if path.exists():
        return path
    SCRATCH.mkdir(exist_ok=True)
    part = SCRATCH / "catchup-part.log"
    with open(path.with_suffix(".tmp"), "wb") as out:
        seed = 1
        while out.tell() < mb << 20:
            generate(part, 1_000_000, seed=seed)
            with open(part, "rb") as block:
                shutil.copyfileobj(block, out, 1 << 20)
            seed += 1
    part.unlink()
    path.with_suffix(".tmp").rename(path)
    return path


def make(path: Path, line: bytes, mb: int) -> int:
    block = line * max(1, (4 << 20) // len(line))
    with open(path, "wb") as handle:
        while handle.tell() < mb << 20:
            handle.write(block)
    return path.stat().st_size


def load() -> float:
    return round(os.getloadavg()[0], 1)


def raw_read(transport: Transport, path: Path, size: int, chunk: int, what: str) -> dict[str, object]:
    l0 = load()
    t0, c0 = time.perf_counter(), time.process_time()
    pos = 0
    while pos < size:
        got = transport.read(str(path), pos, min(chunk, size - pos))
        if not got:
            break
        pos += len(got)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    row: dict[str, object] = {"what": what, "mb": round(pos / 1e6), "s": round(wall, 2),
                              "mb_s": round(pos / 1e6 / wall), "client_cpu_s": round(cpu, 2),
                              "load": f"{l0}-{load()}"}
    catchup = getattr(transport, "_catchup", None)
    if catchup is not None and chunk > SFTP_READ_MAX:
        catchup.close()  # counts the last stream
        st = catchup.stats
        row.update(plain_mb=round(st.plain_bytes / 1e6), gzip_mb=round(st.gzip_bytes / 1e6),
                   gzip_wire_mb=round(st.gzip_wire_bytes / 1e6), fallbacks=st.fallbacks)
    return row


def openssh_cat(server: Sshd, path: Path, size: int, netns: list[str]) -> dict[str, object]:
    """OpenSSH's own client (its default cipher) streaming the same file: the box's ceiling."""
    argv = [*netns, "ssh", "-q", "-i", server.key_path, "-p", str(server.port), "-o", "BatchMode=yes",
            "-o", f"UserKnownHostsFile={server.known_hosts_path}", f"{server.user}@{server.host}", "cat", str(path)]
    l0 = load()
    t0 = time.perf_counter()
    with subprocess.Popen(argv, stdout=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        got = 0
        while block := proc.stdout.read(1 << 20):
            got += len(block)
        _, status, usage = os.wait4(proc.pid, 0)  # reaped here for its CPU time
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    assert got == size, (got, size)
    return {"what": "OpenSSH client `ssh host cat file` (baseline)", "mb": round(size / 1e6), "s": round(wall, 2),
            "mb_s": round(size / 1e6 / wall), "load": f"{l0}-{load()}",
            "client_cpu_s": round(usage.ru_utime + usage.ru_stime, 2)}


@contextmanager
def ctr_cipher() -> Iterator[None]:
    """paramiko's own order (aes128-ctr + hmac-sha2-256 first): what main negotiated before."""
    saved = GcmFirstTransport._preferred_ciphers
    GcmFirstTransport._preferred_ciphers = paramiko.Transport._preferred_ciphers  # type: ignore[attr-defined]
    try:
        yield
    finally:
        GcmFirstTransport._preferred_ciphers = saved


def raw_rows(server: Sshd, path: Path, opts: SshOptions, netns: list[str]) -> None:
    size = path.stat().st_size
    modes: tuple[tuple[Compression, str], ...] = (
        ("off", "plain stream"), ("gzip", "gzip -1 stream"), ("auto", "auto (default)"))
    for mode, label in modes:
        remote = SshTransport(server.target(), SshOptions(compression=mode, socket_factory=opts.socket_factory))
        remote.connect()
        try:
            print(json.dumps(raw_read(remote, path, size, READ_CHUNK, label)), flush=True)
        finally:
            remote.close()
    with ctr_cipher():
        remote = SshTransport(server.target(), SshOptions(compression="off", socket_factory=opts.socket_factory))
        remote.connect()
    try:
        print(json.dumps(raw_read(remote, path, size, READ_CHUNK, "plain stream, aes128-ctr (main before)")),
              flush=True)
        print(json.dumps(openssh_cat(server, path, size, netns)), flush=True)
        sftp = min(size, 64 << 20)
        print(json.dumps(raw_read(remote, path, sftp, SFTP_READ_MAX, "SFTP, 256 KiB requests")), flush=True)
    finally:
        remote.close()


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


def tail_rows(remote: Transport, directory: Path, tail_mb: int) -> None:
    for name, line in (("short SGLang lines", SGLANG), ("16 KiB JSONL lines", JSONL)):
        path = directory / "tail.log"
        size = make(path, line, tail_mb)
        for tname, transport in (("local", LocalTransport()), ("ssh", remote)):
            print(json.dumps(tail_all(transport, path, size, f"{name}, {tname}")), flush=True)
        path.unlink()


@contextmanager
def shaped_link(rate: str) -> Iterator[tuple[Sshd, SshOptions, list[str]]]:
    from tests.fixtures.netns import NetnsHost  # root and iproute2: only for --link

    host = NetnsHost(Path(tempfile.mkdtemp(prefix="kvwatch-bench-link-")))
    try:
        server = host.up()
        subprocess.run(["tc", "-n", host.host_ns, "qdisc", "add", "dev", host.veth_host, "root", "tbf",
                        "rate", rate, "burst", "1mb", "latency", "50ms"], check=True)
        yield server, SshOptions(socket_factory=host.socket_factory), ["ip", "netns", "exec", host.client_ns]
    finally:
        host.down()
        shutil.rmtree(host.dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--mb", type=int, default=1024, help="size of the realistic log (MiB)")
    parser.add_argument("--tail-mb", type=int, default=0, help="Tail.poll cases (MiB each; 0 = skip)")
    parser.add_argument("--link", help="shape a network-namespace link to this tc rate (e.g. 1gbit)")
    args = parser.parse_args()
    path = realistic_log(args.mb)
    print(json.dumps({"file": str(path), "mb": round(path.stat().st_size / 1e6), "link": args.link or "loopback",
                      "cpus": os.cpu_count(), "load": load()}), flush=True)
    if args.link:
        with shaped_link(args.link) as (server, opts, netns):
            raw_rows(server, path, opts, netns)
        return
    with throwaway_sshd() as server:
        raw_rows(server, path, SshOptions(), [])
        if args.tail_mb:
            remote = server.connect()
            try:
                tail_rows(remote, server.dir, args.tail_mb)
            finally:
                remote.close()


if __name__ == "__main__":
    main()
