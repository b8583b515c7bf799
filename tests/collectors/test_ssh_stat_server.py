"""The remote `stat` behind every poll, over a real sshd: perl where the host has it (a poll starts no
process there), `sh` with `stat` where it has not, and both give the same answers: inode, size and
whole-second mtime of the file a path names (symlinks followed), None for a missing path."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvwatch.collectors.base import SourceMissing
from kvwatch.collectors.ssh.transport import SshTransport
from tests.fixtures.sshd import Sshd, own_sshd

TOOLS = ("sh", "head", "tr", "tail", "cat")
# every `stat` the host runs is written down before the real one runs
COUNTING_STAT = '#!/bin/sh\necho "$$" >> "{log}"\nexec {real} "$@"\n'


@contextlib.contextmanager
def host_with(tools: tuple[str, ...], broken_perl: bool = False) -> Iterator[tuple[Sshd, Path]]:
    """An sshd whose sessions' PATH has `tools` and a counting `stat` (and a perl that exits at once)."""
    d = Path(tempfile.mkdtemp(prefix="kvwatch-sshd-stat-"))
    bin_dir, calls = d / "tools", d / "stat-calls"
    bin_dir.mkdir()
    for name in tools:
        found = shutil.which(name)
        assert found is not None, name
        (bin_dir / name).symlink_to(found)
    real = shutil.which("stat")
    assert real is not None
    scripts = {"stat": COUNTING_STAT.format(log=calls, real=real)}
    if broken_perl:
        scripts["perl"] = "#!/bin/sh\necho 'perl: cannot start' >&2\nexit 2\n"
    for name, text in scripts.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    calls.touch()
    with own_sshd(d, path=str(bin_dir)) as server:
        yield server, calls


@pytest.fixture
def with_perl() -> Iterator[tuple[Sshd, Path]]:
    with host_with((*TOOLS, "perl")) as host:
        yield host


@pytest.fixture
def without_perl() -> Iterator[tuple[Sshd, Path]]:
    with host_with(TOOLS) as host:
        yield host


@pytest.fixture
def with_broken_perl() -> Iterator[tuple[Sshd, Path]]:
    with host_with(TOOLS, broken_perl=True) as host:
        yield host


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


@contextlib.contextmanager
def answered(server: Sshd, tmp_path: Path) -> Iterator[str | None]:
    """Connect, check the answers (`assert_answers`), and give what answered: "perl" or "sh"."""
    transport = server.connect()
    try:
        assert_answers(transport, tmp_path)
        assert transport._shell is not None
        yield transport._shell.server
    finally:
        transport.close()


def test_a_host_with_perl_answers_polls_without_starting_a_process(with_perl: tuple[Sshd, Path],
                                                                      tmp_path: Path) -> None:
    server, calls = with_perl
    with answered(server, tmp_path) as answering:
        assert answering == "perl"
    transport = server.connect()
    try:
        for _ in range(20):
            transport.stat_many([str(tmp_path / "server.log")])
    finally:
        transport.close()
    assert calls.read_text() == ""  # no `stat` ran on the host, for 23 requests over two connections


def test_a_host_without_perl_answers_the_same_through_sh(without_perl: tuple[Sshd, Path], tmp_path: Path) -> None:
    server, calls = without_perl
    with answered(server, tmp_path) as answering:
        assert answering == "sh"
    assert len(calls.read_text().split()) >= 6  # one `stat` a path at least


def test_a_host_whose_perl_cannot_start_is_answered_by_sh(with_broken_perl: tuple[Sshd, Path],
                                                          tmp_path: Path) -> None:
    with answered(with_broken_perl[0], tmp_path) as answering:
        assert answering == "sh"


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
    with own_sshd(d, env={"BASH_ENV": str(d / "banner.sh")}) as server:
        yield server


def test_a_banner_cannot_pass_for_the_hello(banner_that_says_hello: Sshd, tmp_path: Path) -> None:
    with answered(banner_that_says_hello, tmp_path) as answering:
        assert answering == "perl"
