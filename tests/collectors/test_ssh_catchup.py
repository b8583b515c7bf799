"""Catch-up over real sshd through the gzip -1 stream: exact bytes, growth, rotation and truncation
during the read, and the plain fallback when gzip is absent or fails mid-stream."""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvwatch.collectors.ssh.catchup import PROBE, Compression
from kvwatch.collectors.ssh.transport import SshOptions, SshTransport
from kvwatch.collectors.tail import Tail
from tests.collectors.harness import Sink, append, assert_exactly_once, numbered
from tests.fixtures.sshd import Sshd, own_sshd

pytestmark = pytest.mark.sshd

GZIP = SshOptions(compression="gzip")


def log_bytes(mb: float, seed: int = 5) -> bytes:
    """SGLang-like decode lines with varied numbers (compressible like a real log, ~6x), plus every
    byte value and invalid UTF-8 so that inflating is checked on binary data too."""
    rng = random.Random(seed)
    out = [bytes(range(256)) * 16, b"\xff\xfe not utf-8 \xc3\x28\n"]
    size = 0
    while size < mb * 1e6:
        line = (f"[2026-02-24 12:{rng.randrange(60):02d}:{rng.randrange(60):02d} TP0] Decode batch, "
                f"#running-req: {rng.randint(1, 150)}, #token: {rng.randint(1000, 376000)}, "
                f"token usage: {rng.random():.2f}, gen throughput (token/s): {rng.uniform(100, 1500):.2f}\n")
        out.append(line.encode())
        size += len(line)
    return b"".join(out)


def read_all(remote: SshTransport, path: Path, chunk: int = 3_000_000) -> bytes:
    """Like the tail: re-read a little before each chunk, so the cursor's look-back is used too."""
    chunks, pos = [], 0
    while pos < path.stat().st_size:
        back = min(pos, 64)
        data = remote.read(str(path), pos - back, chunk + back)
        chunks.append(data[back:])
        pos += len(data) - back
    return b"".join(chunks)


def test_compressed_catch_up_is_byte_exact(sshd: Sshd, tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    big.write_bytes(log_bytes(12))
    remote = sshd.connect(GZIP)
    try:
        assert read_all(remote, big) == big.read_bytes()
        stats = remote._catchup.stats
        assert stats.plain_bytes == 0 and stats.fallbacks == 0
        assert stats.gzip_bytes == big.stat().st_size
        assert stats.gzip_wire_bytes * 3 < stats.gzip_bytes  # really compressed on the wire
    finally:
        remote.close()


def test_auto_times_both_streams_and_stays_exact(sshd: Sshd, tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    big.write_bytes(log_bytes(PROBE * 2.6 / 1e6))
    remote = sshd.connect()  # compression="auto": a plain probe, a gzip probe, then the faster
    try:
        assert read_all(remote, big, 8 << 20) == big.read_bytes()
        stats = remote._catchup.stats
        assert stats.plain_bytes >= PROBE and stats.gzip_bytes >= PROBE
        # each new stream starts at the 64 bytes read_all asks for again: the only overlap
        size = big.stat().st_size
        assert size <= stats.plain_bytes + stats.gzip_bytes <= size + 64 * 4
    finally:
        remote.close()


def test_file_growing_during_the_compressed_read(sshd: Sshd, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    append(log, numbered(1, 200_000, pad="p" * 60))  # ~14 MB: several compressed reads
    stop, written = threading.Event(), [200_000]

    def writer() -> None:
        while not stop.is_set() and written[0] < 400_000:
            append(log, numbered(written[0] + 1, written[0] + 2000, pad="q" * 60))
            written[0] += 2000

    remote = sshd.connect(GZIP)
    thread = threading.Thread(target=writer)
    try:
        tail, sink = Tail(remote, str(log), "s"), Sink()
        thread.start()
        sink.poll(tail)
        sink.poll(tail)
        stop.set()
        thread.join()
        sink.until(tail, sink.has(written[0]), timeout=60)
        assert_exactly_once(sink, 1, written[0])
        remote._catchup.close()
        assert remote._catchup.stats.gzip_bytes > 0 and remote._catchup.stats.fallbacks == 0
    finally:
        stop.set()
        if thread.is_alive():
            thread.join()
        remote.close()


def test_rename_rotation_during_compressed_catch_up(sshd: Sshd, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    writer = open(log, "ab", buffering=0)  # noqa: SIM115 - the writer outlives the rename, like SGLang's
    writer.write(numbered(1, 300_000, pad="p" * 40))  # ~15 MB: the first poll reads 8 MiB of it
    remote = sshd.connect(GZIP)
    try:
        tail, sink = Tail(remote, str(log), "s", rotate_wait=0.3), Sink()
        sink.poll(tail)
        assert tail.behind
        os.rename(log, tmp_path / "server.log.1")
        writer.write(numbered(300_001, 300_100))
        writer.close()
        append(log, numbered(1_000_001, 1_050_000, pad="n" * 40))
        sink.until(tail, lambda s: len(s.lines) >= 350_100 and s.state is not None
                   and s.state.draining is None, timeout=60)
        assert sorted(sink.seqs()) == [*range(1, 300_101), *range(1_000_001, 1_050_001)]
        assert tail.stats.rotations == 1
    finally:
        remote.close()


@pytest.mark.parametrize("compression", ["off", "gzip"])
def test_truncate_and_regrow_during_catch_up(sshd: Sshd, tmp_path: Path, compression: Compression) -> None:
    """The stream has read megabytes of the old content ahead when the file is rewritten in place:
    those bytes must not be taken for the new file's (main lost the whole new generation here)."""
    log = tmp_path / "server.log"
    append(log, numbered(1, 300_000, pad="p" * 40))
    remote = sshd.connect(SshOptions(compression=compression))
    try:
        tail, sink = Tail(remote, str(log), "s"), Sink()
        sink.poll(tail)
        first = len(sink.lines)
        assert 0 < first < 300_000
        with open(log, "wb") as handle:  # truncated and rewritten past our offset before the next poll
            handle.write(numbered(500_001, 700_000, pad="P" * 50))
        sink.until(tail, sink.has(first + 200_000), timeout=60)
        assert sink.seqs() == [*range(1, first + 1), *range(500_001, 700_001)]
        assert tail.stats.truncations == 1
    finally:
        remote.close()


@pytest.fixture
def sshd_without_gzip() -> Iterator[Sshd]:
    """A second real sshd whose sessions' PATH has the tools the transport needs, but no gzip."""
    d = Path(tempfile.mkdtemp(prefix="kvwatch-sshd-nogzip-"))
    tools = d / "tools"
    tools.mkdir()
    for name in ("sh", "tail", "stat", "head", "cat", "tr"):
        found = shutil.which(name)
        assert found is not None, name
        (tools / name).symlink_to(found)
    with own_sshd(d, path=str(tools)) as server:
        yield server


def test_host_without_gzip_reads_plain(sshd_without_gzip: Sshd, tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    big.write_bytes(log_bytes(6))
    remote = sshd_without_gzip.connect(GZIP)
    try:
        assert remote.run(["sh", "-c", "command -v gzip"]).exit_status != 0  # really absent there
        assert read_all(remote, big) == big.read_bytes()
        remote._catchup.close()
        stats = remote._catchup.stats
        assert remote._catchup.choice.gzip_ok is False
        assert (stats.gzip_bytes, stats.plain_bytes, stats.fallbacks) == (0, big.stat().st_size, 0)
    finally:
        remote.close()


def test_gzip_failing_mid_stream_falls_back_to_plain(sshd: Sshd, tmp_path: Path) -> None:
    """A `gzip` first on the sessions' PATH that dies after ~200 KB of output (killed, out of
    memory, disk error): the range being read is read again plain, nothing lost or doubled."""
    fake = sshd.bin_dir / "gzip"
    real = shutil.which("gzip")
    fake.write_text(f"#!/bin/sh\n{real} \"$@\" | head -c 200000\necho 'gzip: killed' >&2\nexit 1\n")
    fake.chmod(0o755)
    big = tmp_path / "big.log"
    big.write_bytes(log_bytes(8))
    remote = sshd.connect(GZIP)
    try:
        assert read_all(remote, big, 1_000_000) == big.read_bytes()
        remote._catchup.close()
        stats = remote._catchup.stats
        assert stats.fallbacks == 1 and remote._catchup.choice.gzip_ok is False
        assert stats.gzip_bytes >= 1_000_000 and stats.plain_bytes > 0  # some reads were served inflated
    finally:
        remote.close()
        fake.unlink()
