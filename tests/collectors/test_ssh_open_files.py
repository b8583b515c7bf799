"""A followed file's SFTP handle is kept between reads, and only while its path names the same file."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kvwatch.collectors.base import FileStat, SourceMissing
from kvwatch.collectors.ssh.open_files import INODES_MAX, OpenFiles
from kvwatch.collectors.ssh.transport import SshTransport
from tests.fixtures.sshd import Sshd

pytestmark = pytest.mark.sshd


@pytest.fixture
def counted(sshd: Sshd) -> Iterator[tuple[SshTransport, list[str]]]:
    """A connected transport and the paths its SFTP client opened, in order."""
    transport = sshd.connect()
    sftp = transport._sftp_client()
    opened: list[str] = []
    real_open = sftp.open

    def open_counted(path: str, *args: Any, **kwargs: Any) -> Any:
        opened.append(path)
        return real_open(path, *args, **kwargs)

    sftp.open = open_counted  # type: ignore[method-assign]
    try:
        yield transport, opened
    finally:
        transport.close()


def test_reads_of_a_growing_file_open_it_once(counted: tuple[SshTransport, list[str]], tmp_path: Path) -> None:
    transport, opened = counted
    log = tmp_path / "server.log"
    log.write_bytes(b"one\n")
    assert transport.stat_many([str(log)])[str(log)] is not None
    assert transport.read(str(log), 0, 100) == b"one\n"
    with open(log, "ab") as handle:
        handle.write(b"two\n")
    transport.stat_many([str(log)])
    assert transport.read(str(log), 4, 100) == b"two\n"
    assert transport.read(str(log), 0, 3) == b"one"
    assert opened == [str(log)]


def test_a_replaced_path_is_read_from_its_new_file(counted: tuple[SshTransport, list[str]], tmp_path: Path) -> None:
    transport, opened = counted
    log = tmp_path / "server.log"
    log.write_bytes(b"old run\n")
    transport.stat(str(log))
    assert transport.read(str(log), 0, 100) == b"old run\n"
    fresh = tmp_path / "server.log.new"
    fresh.write_bytes(b"new run, longer\n")
    os.rename(fresh, log)  # the path now names another inode (a restart writing its log anew)
    transport.stat_many([str(log)])
    assert transport.read(str(log), 0, 100) == b"new run, longer\n"
    assert opened == [str(log), str(log)]


def test_a_path_never_stated_is_opened_for_each_read(counted: tuple[SshTransport, list[str]], tmp_path: Path) -> None:
    transport, opened = counted
    log = tmp_path / "server.log"
    log.write_bytes(b"abc\n")
    assert transport.read(str(log), 1, 2) == b"bc"
    assert transport.read(str(log), 0, 1) == b"a"
    assert opened == [str(log), str(log)]


def test_a_vanished_path_is_not_read_through_its_old_handle(counted: tuple[SshTransport, list[str]],
                                                            tmp_path: Path) -> None:
    transport, _ = counted
    log = tmp_path / "server.log"
    log.write_bytes(b"abc\n")
    transport.stat(str(log))
    assert transport.read(str(log), 0, 4) == b"abc\n"
    log.unlink()
    with pytest.raises(SourceMissing):
        transport.stat(str(log))
    with pytest.raises(SourceMissing):
        transport.read(str(log), 0, 4)


def test_the_inodes_remembered_are_the_most_recently_stated_paths() -> None:
    files = OpenFiles()
    for i in range(INODES_MAX + 500):
        files.saw(f"/out/part-{i}.jsonl", FileStat(inode=i + 1, size=1))
    files.saw("/out/part-0.jsonl", FileStat(inode=1, size=2))  # stat'ed again: the newest
    remembered = files.remembered()
    assert len(remembered) == INODES_MAX
    assert remembered[-1] == "/out/part-0.jsonl" and "/out/part-1.jsonl" not in remembered
    assert f"/out/part-{INODES_MAX + 499}.jsonl" in remembered
    files.saw("/out/part-0.jsonl", None)  # vanished: forgotten at once
    assert "/out/part-0.jsonl" not in files.remembered()
