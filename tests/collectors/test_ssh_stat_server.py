"""The remote `stat` behind every poll, over a real sshd: perl where the host has it (a poll starts no
process there), `sh` with `stat` where it has not, and both give the same answers: inode, size and
whole-second mtime of the file a path names (symlinks followed), None for a missing path."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvwatch.collectors.base import SourceMissing
from kvwatch.collectors.ssh.transport import SshTransport
from tests.fixtures.sshd import Sshd, start_sshd, stop_process

TOOLS = ("sh", "head", "tr", "tail", "cat")
# every `stat` the host runs is written down before the real one runs
COUNTING_STAT = '#!/bin/sh\necho "$$" >> "{log}"\nexec {real} "$@"\n'


def host_with(tools: tuple[str, ...]) -> Iterator[tuple[Sshd, Path]]:
    d = Path(tempfile.mkdtemp(prefix="kvwatch-sshd-stat-"))
    bin_dir, calls = d / "tools", d / "stat-calls"
    bin_dir.mkdir()
    for name in tools:
        found = shutil.which(name)
        assert found is not None, name
        (bin_dir / name).symlink_to(found)
    real = shutil.which("stat")
    assert real is not None
    (bin_dir / "stat").write_text(COUNTING_STAT.format(log=calls, real=real))
    (bin_dir / "stat").chmod(0o755)
    calls.touch()
    server = start_sshd(d, path=str(bin_dir))
    try:
        yield server, calls
    finally:
        stop_process(server.proc)
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def with_perl() -> Iterator[tuple[Sshd, Path]]:
    yield from host_with((*TOOLS, "perl"))


@pytest.fixture
def without_perl() -> Iterator[tuple[Sshd, Path]]:
    yield from host_with(TOOLS)


@pytest.fixture
def with_broken_perl() -> Iterator[tuple[Sshd, Path]]:
    for server, calls in host_with(TOOLS):
        (server.dir / "tools" / "perl").write_text("#!/bin/sh\necho 'perl: cannot start' >&2\nexit 2\n")
        (server.dir / "tools" / "perl").chmod(0o755)
        yield server, calls


def files(tmp_path: Path) -> tuple[list[str], dict[str, os.stat_result | None]]:
    """Awkward names, a symlink, a missing file and a path under a file; what os.stat says of each."""
    plain = tmp_path / "server.log"
    plain.write_bytes(b"x" * 1234)
    spaced = tmp_path / "out dir" / "raw responses 'v2'.jsonl"
    spaced.parent.mkdir()
    spaced.write_bytes(b"y" * 77)
    odd = tmp_path / "naïve\nname $(touch pwned).log"
    odd.write_bytes(b"")
    link = tmp_path / "current.log"
    link.symlink_to(plain)
    paths = [str(plain), str(spaced), str(odd), str(link), str(tmp_path / "gone.log"), str(plain / "below")]
    expected = {p: (os.stat(p) if Path(p).exists() and not p.endswith("below") else None) for p in paths}
    return paths, expected


def assert_answers(transport: SshTransport, tmp_path: Path) -> None:
    paths, expected = files(tmp_path)
    found = transport.stat_many(paths)
    for path in paths:
        want = expected[path]
        got = found[path]
        if want is None:
            assert got is None, path
        else:
            assert got is not None, path
            assert (got.inode, got.size, got.mtime) == (want.st_ino, want.st_size, float(int(want.st_mtime))), path
    assert transport.stat(paths[1]).size == 77
    with pytest.raises(SourceMissing):
        transport.stat(paths[4])
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()


def test_a_host_with_perl_answers_polls_without_starting_a_process(with_perl: tuple[Sshd, Path],
                                                                      tmp_path: Path) -> None:
    server, calls = with_perl
    transport = server.connect()
    try:
        assert_answers(transport, tmp_path)
        for _ in range(20):
            transport.stat_many([str(tmp_path / "server.log")])
        assert transport._shell is not None and transport._shell.server == "perl"
        assert calls.read_text() == ""  # no `stat` ran on the host, for 22 requests
    finally:
        transport.close()


def test_a_host_without_perl_answers_the_same_through_sh(without_perl: tuple[Sshd, Path], tmp_path: Path) -> None:
    server, calls = without_perl
    transport = server.connect()
    try:
        assert_answers(transport, tmp_path)
        assert transport._shell is not None and transport._shell.server == "sh"
        assert len(calls.read_text().split()) >= 6  # one `stat` a path at least
    finally:
        transport.close()


def test_a_host_whose_perl_cannot_start_is_answered_by_sh(with_broken_perl: tuple[Sshd, Path],
                                                          tmp_path: Path) -> None:
    server, _ = with_broken_perl
    transport = server.connect()
    try:
        assert_answers(transport, tmp_path)
        assert transport._shell is not None and transport._shell.server == "sh"
    finally:
        transport.close()


def test_a_poll_of_6000_files_is_one_answer(sshd: Sshd, tmp_path: Path) -> None:
    """A glob over thousands of output files: the answer line is longer than 64 KiB."""
    paths = []
    for i in range(6000):
        path = tmp_path / f"shard-{i:05d}.jsonl"
        path.write_bytes(b"z" * (i % 7))
        paths.append(str(path))
    transport = sshd.connect()
    try:
        found = transport.stat_many(paths)
    finally:
        transport.close()
    sizes = [stat.size if (stat := found[p]) is not None else None for p in paths]
    assert sizes == [i % 7 for i in range(6000)]


@pytest.fixture
def banner_that_says_hello() -> Iterator[Sshd]:
    """Every session's shell first prints what an older kvwatch took for the stat process's hello."""
    d = Path(tempfile.mkdtemp(prefix="kvwatch-sshd-hello-"))
    (d / "banner.sh").write_text("echo 'kvwatch-stat sh'\necho 'kvwatch-stat perl'\n")
    server = start_sshd(d, env={"BASH_ENV": str(d / "banner.sh")})
    try:
        yield server
    finally:
        stop_process(server.proc)
        shutil.rmtree(d, ignore_errors=True)


def test_a_banner_cannot_pass_for_the_hello(banner_that_says_hello: Sshd, tmp_path: Path) -> None:
    transport = banner_that_says_hello.connect()
    try:
        assert_answers(transport, tmp_path)
        assert transport._shell is not None and transport._shell.server == "perl"
    finally:
        transport.close()
