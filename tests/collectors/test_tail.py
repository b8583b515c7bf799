"""The tail fault catalogue (appends, partial lines, rotation, truncation, replace, encodings),
each run on local files and over real sshd; writers number their lines and every one must be
stored exactly once."""

from __future__ import annotations

import gzip
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from kvwatch.collectors.base import SourceUnreadable, Transport
from kvwatch.collectors.tail import Tail
from tests.collectors.harness import Sink, append, assert_exactly_once, numbered


def test_partial_line_is_held_until_its_newline(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    append(log, numbered(1, 3) + b"00000004 half")
    tail, sink = Tail(transport, str(log), "s"), Sink()
    sink.poll(tail)
    assert sink.seqs() == [1, 2, 3]
    assert sink.state is not None
    assert sink.state.offset == len(numbered(1, 3))
    assert sink.poll(tail) == []
    append(log, b" and the rest\n" + numbered(5, 5))
    sink.poll(tail)
    assert sink.lines[3].text == "00000004 half and the rest"
    assert sink.lines[3].line_no == 4
    assert_exactly_once(sink, 1, 5)


def test_partial_line_across_restart_is_stored_once(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    append(log, numbered(1, 10) + b"00000011 frag")
    sink = Sink()
    sink.poll(Tail(transport, str(log), "s"))
    append(log, b"ment\n" + numbered(12, 20))
    sink.until(Tail(transport, str(log), "s", sink.state), sink.has(20))  # a restarted kvwatch
    assert_exactly_once(sink, 1, 20)
    assert sink.lines[10].text == "00000011 fragment"


def test_rename_rotation_drains_the_old_file(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    writer = open(log, "ab", buffering=0)  # noqa: SIM115 - the writer outlives the rename, like SGLang's
    writer.write(numbered(1, 100))
    tail, sink = Tail(transport, str(log), "s", rotate_wait=0.5), Sink()
    sink.poll(tail)
    writer.write(numbered(101, 150))
    os.rename(log, tmp_path / "server.log.1")
    writer.write(numbered(151, 200) + b"00000201 unfini")  # the old process still writes to its fd
    append(log, numbered(1001, 1050))
    sink.poll(tail)
    writer.write(b"shed\n")
    writer.close()
    sink.until(tail, lambda s: len(s.lines) >= 251 and s.state is not None and s.state.draining is None)
    assert sorted(sink.seqs()) == [*range(1, 202), *range(1001, 1051)]
    assert tail.stats.rotations == 1
    generations = {line.generation for line in sink.lines}
    assert generations == {1, 2}


def test_rotation_while_kvwatch_was_down(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    append(log, numbered(1, 50))
    sink = Sink()
    sink.poll(Tail(transport, str(log), "s"))
    append(log, numbered(51, 80))
    os.rename(log, tmp_path / "server.log.1")
    append(log, numbered(81, 120))
    sink.until(Tail(transport, str(log), "s", sink.state, rotate_wait=0.2), sink.has(120))
    assert_exactly_once(sink, 1, 120)


def written_at(path: Path, minutes_ago: float) -> None:
    """Rotations are minutes or days apart, and SSH gives whole-second mtimes: set them that far apart."""
    when = time.time() - 60 * minutes_ago
    os.utime(path, (when, when))


def rotate_numbered(log: Path, keep: int = 5) -> None:
    """logrotate's numbered rename: .K-1 -> .K, ..., .1 -> .2, the log -> .1; a new log is created."""
    for k in range(keep - 1, 0, -1):
        if (log.parent / f"{log.name}.{k}").exists():
            os.rename(log.parent / f"{log.name}.{k}", log.parent / f"{log.name}.{k + 1}")
    os.rename(log, log.parent / f"{log.name}.1")
    log.touch()


def rotations_while_away(log: Path, minutes_ago: list[int], then: list[tuple[int, int]]) -> None:
    """For each rotation: the log last written `minutes_ago`, renamed away, then lines `first..last`."""
    for age, (first, last) in zip(minutes_ago, then, strict=True):
        written_at(log, age)
        rotate_numbered(log)
        append(log, numbered(first, last))


def test_two_rotations_while_kvwatch_was_down_lose_no_generation(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    append(log, numbered(1, 50))
    sink = Sink()
    sink.poll(Tail(transport, str(log), "s"))
    append(log, numbered(51, 80))  # after our last read, then two rotations before we are back
    rotations_while_away(log, [20, 10], [(81, 120), (121, 150)])
    tail = Tail(transport, str(log), "s", sink.state, rotate_wait=0.2)
    sink.until(tail, lambda s: len(s.lines) >= 150 and s.state is not None and s.state.draining is None)
    assert_exactly_once(sink, 1, 150)
    assert sink.seqs() == list(range(1, 151))  # in the order written
    by_generation = {g: [int(x.text.split()[0]) for x in sink.lines if x.generation == g] for g in (1, 2, 3)}
    assert by_generation == {1: list(range(1, 81)), 2: list(range(81, 121)), 3: list(range(121, 151))}
    assert (tail.stats.rotations, tail.stats.lost_generations) == (2, 0)


def test_dated_rotations_between_polls_with_a_compressed_one(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    append(log, numbered(1, 40))
    tail, sink = Tail(transport, str(log), "s", rotate_wait=0.2), Sink()
    sink.poll(tail)
    append(log, numbered(41, 60))
    for day, (first, last) in enumerate(((61, 90), (91, 100), (101, 130)), start=1):
        written_at(log, 30 - 10 * day)
        os.rename(log, tmp_path / f"server.log-2026120{day}")
        append(log, numbered(first, last))
    day2 = tmp_path / "server.log-20261202"
    with open(day2, "rb") as raw, gzip.open(day2.with_name(day2.name + ".gz"), "wb") as gz:
        gz.write(raw.read())  # compressed: 61-90 cannot be read at an offset
    os.remove(tmp_path / "server.log-20261202")
    sink.until(tail, lambda s: len(s.lines) >= 100 and s.state is not None and s.state.draining is None)
    assert sink.seqs() == [*range(1, 61), *range(91, 131)]
    assert (tail.stats.rotations, tail.stats.lost_generations) == (2, 1)


class UnreadableFile:
    """`transport` with one file that cannot be read (permission), as a rotated log can be."""

    def __init__(self, transport: Transport, path: Path) -> None:
        self.transport, self.path = transport, str(path)

    def read(self, path: str, offset: int, length: int) -> bytes:
        if path == self.path:
            raise SourceUnreadable(f"{path}: permission denied")
        return self.transport.read(path, offset, length)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


def test_an_unreadable_generation_in_between_does_not_hold_up_the_rest(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    append(log, numbered(1, 40))
    sink = Sink()
    sink.poll(Tail(transport, str(log), "s"))
    rotations_while_away(log, [30, 20, 10], [(41, 60), (61, 80), (81, 100)])
    faulty = UnreadableFile(transport, tmp_path / "server.log.2")  # 41-60
    tail = Tail(faulty, str(log), "s", sink.state, rotate_wait=0.2)  # type: ignore[arg-type]
    sink.until(tail, lambda s: len(s.lines) >= 80 and s.state is not None and s.state.draining is None)
    assert sink.seqs() == [*range(1, 41), *range(61, 101)]
    assert tail.stats.lost_generations == 1


def test_a_counter_naming_does_not_read_older_generations_again(transport: Transport, tmp_path: Path) -> None:
    """`mv server.log server.log.$n` with n growing: older files have smaller numbers, like logrotate's
    newer ones; their modification times tell them apart."""
    log = tmp_path / "server.log"
    append(log, numbered(1, 30))
    tail, sink = Tail(transport, str(log), "s", rotate_wait=0.2), Sink()
    sink.poll(tail)
    written_at(log, 20)
    os.rename(log, tmp_path / "server.log.3")
    append(log, numbered(31, 60))
    sink.until(tail, sink.has(60))
    append(log, numbered(61, 70))
    written_at(log, 10)
    shutil.copyfile(log, tmp_path / "server.log.5")  # a copy, as copytruncate makes
    written_at(tmp_path / "server.log.5", 10)
    append(log, numbered(71, 80))
    os.rename(log, tmp_path / "server.log.7")
    append(log, numbered(81, 90))
    sink.until(tail, lambda s: len(s.lines) >= 90 and s.state is not None and s.state.draining is None)
    assert_exactly_once(sink, 1, 90)
    assert tail.stats.rotations == 2


def test_copytruncate(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.write(fd, numbered(1, 300))
    tail, sink = Tail(transport, str(log), "s"), Sink()
    sink.poll(tail)
    shutil.copy(log, tmp_path / "server.log.1")
    os.truncate(log, 0)
    os.write(fd, numbered(301, 310))  # O_APPEND: the writer lands at the new end
    os.close(fd)
    sink.until(tail, sink.has(310))
    assert_exactly_once(sink, 1, 310)
    assert tail.stats.truncations == 1


def test_copytruncate_drains_what_only_the_copy_holds(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.write(fd, numbered(1, 300))
    tail, sink = Tail(transport, str(log), "s"), Sink()
    sink.poll(tail)
    os.write(fd, numbered(301, 420))  # after our last read: once truncated, only the copy has them
    shutil.copy(log, tmp_path / "server.log.1")
    os.truncate(log, 0)
    os.write(fd, numbered(421, 450))
    os.close(fd)
    sink.until(tail, sink.has(450))
    assert_exactly_once(sink, 1, 450)
    assert (tail.stats.truncations, tail.stats.copies_drained, tail.stats.lost_generations) == (1, 1, 0)
    old = [line for line in sink.lines if line.generation == 1]
    new = [line for line in sink.lines if line.generation == 2]
    assert [line.line_no for line in old] == list(range(1, 421))  # the old generation's numbers go on
    assert old[-1].offset == len(numbered(1, 420))
    assert [line.line_no for line in new] == list(range(1, 31))
    assert new[-1].offset == len(numbered(421, 450))
    assert sink.state is not None and sink.state.draining is None


def test_copytruncate_loses_only_the_copy_window(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.write(fd, numbered(1, 300))
    tail, sink = Tail(transport, str(log), "s"), Sink()
    sink.poll(tail)
    os.write(fd, numbered(301, 400))
    shutil.copy(log, tmp_path / "server.log.1")
    os.write(fd, numbered(401, 410))  # between the copy and the truncate: in neither file
    os.truncate(log, 0)
    os.write(fd, numbered(411, 450))
    os.close(fd)
    sink.until(tail, sink.has(440))
    assert sorted(sink.seqs()) == [*range(1, 401), *range(411, 451)]
    assert tail.stats.copies_drained == 1


def test_stale_copies_are_not_drained(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    append(log, numbered(1, 200))
    (tmp_path / "server.log.2").write_bytes(numbered(9001, 9500))  # an older generation: another head
    # same first KiB as ours (a deterministic start), other bytes before our offset
    (tmp_path / "server.log-20261202").write_bytes(numbered(1, 100) + numbered(8001, 8500))
    (tmp_path / "server.log.1.gz").write_bytes(numbered(1, 300))  # a compressed name is never read
    (tmp_path / "server.log.d").mkdir()  # a directory is not a copy (reading one over SFTP fails)
    assert (tmp_path / "server.log.d").stat().st_size > len(numbered(1, 200))
    tail, sink = Tail(transport, str(log), "s"), Sink()
    sink.poll(tail)
    append(log, numbered(201, 300))  # unread when truncated, and no copy holds them
    os.truncate(log, 0)
    append(log, numbered(1001, 1010))
    sink.until(tail, sink.has(210))
    assert sorted(sink.seqs()) == [*range(1, 201), *range(1001, 1011)]  # as without any copy
    assert (tail.stats.truncations, tail.stats.copies_drained) == (1, 0)


@pytest.mark.parametrize("regrown", [False, True])
def test_copytruncate_while_kvwatch_was_down(transport: Transport, tmp_path: Path, regrown: bool) -> None:
    """Found from the committed digests alone; `regrown`: the new file is already longer than the
    old offset, so only the marker shows that it is another file."""
    log = tmp_path / "server.log"
    append(log, numbered(1, 300))
    sink = Sink()
    sink.poll(Tail(transport, str(log), "s"))
    append(log, numbered(301, 400))
    shutil.copy(log, tmp_path / "server.log.1")
    os.truncate(log, 0)
    last = 1000 if regrown else 420
    append(log, numbered(401, last))
    tail = Tail(transport, str(log), "s", sink.state)
    sink.until(tail, sink.has(last))
    assert_exactly_once(sink, 1, last)
    assert (tail.stats.truncations, tail.stats.copies_drained) == (1, 1)


def test_copytruncate_with_dateext_names(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    (tmp_path / "server.log-20261202").write_bytes(numbered(5001, 5400))  # yesterday's copy
    append(log, numbered(1, 300))
    tail, sink = Tail(transport, str(log), "s"), Sink()
    sink.poll(tail)
    append(log, numbered(301, 350))
    shutil.copy(log, tmp_path / "server.log-20261203")
    os.truncate(log, 0)
    append(log, numbered(351, 360))
    sink.until(tail, sink.has(360))
    assert_exactly_once(sink, 1, 360)
    assert tail.stats.copies_drained == 1


@pytest.mark.parametrize("then", ["renamed", "compressed"])
def test_copy_drain_resumed_after_a_crash(transport: Transport, tmp_path: Path, then: str) -> None:
    """Truncated and regrown before our next read: the poll that notices it commits the pending
    drain (by the copy's inode). kvwatch dies; meanwhile the copy moves on to `.2`, or is compressed."""
    log = tmp_path / "server.log"
    append(log, numbered(1, 300))
    tail, sink = Tail(transport, str(log), "s"), Sink()
    sink.poll(tail)
    append(log, numbered(301, 400))
    shutil.copy(log, tmp_path / "server.log.1")
    os.truncate(log, 0)
    append(log, numbered(401, 1000))
    assert sink.poll(tail) == []
    assert sink.state is not None and sink.state.draining is not None
    assert sink.state.draining.inode == (tmp_path / "server.log.1").stat().st_ino
    copy = tmp_path / "server.log.1"
    if then == "renamed":
        os.rename(copy, tmp_path / "server.log.2")
    else:
        with gzip.open(tmp_path / "server.log.1.gz", "wb") as packed:
            packed.write(copy.read_bytes())
        copy.unlink()
    resumed = Tail(transport, str(log), "s", sink.state, rotate_wait=0.2)
    want = 1000 if then == "renamed" else 900
    sink.until(resumed, lambda s: len(s.lines) >= want and s.state is not None and s.state.draining is None)
    if then == "renamed":
        assert_exactly_once(sink, 1, 1000)
        assert resumed.stats.lost_generations == 0
    else:  # gone before it was drained: counted, as for a rotated file compressed too early
        assert sorted(sink.seqs()) == [*range(1, 301), *range(401, 1001)]
        assert resumed.stats.lost_generations == 1


def test_truncate_and_regrow_past_the_offset(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    append(log, numbered(1, 100))
    tail, sink = Tail(transport, str(log), "s"), Sink()
    sink.poll(tail)
    with open(log, "wb") as handle:  # truncated, then more than before written before our next poll
        handle.write(numbered(101, 300, pad="PAYLOAD"))
    sink.until(tail, sink.has(300))
    assert_exactly_once(sink, 1, 300)
    assert tail.stats.truncations == 1


def test_truncate_and_regrow_while_kvwatch_was_down(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    append(log, numbered(1, 100))
    sink = Sink()
    sink.poll(Tail(transport, str(log), "s"))
    with open(log, "r+b") as handle:  # same inode, rewritten in place and longer
        handle.write(numbered(101, 250, pad="PAYLOAD"))
    sink.until(Tail(transport, str(log), "s", sink.state), sink.has(250))
    assert_exactly_once(sink, 1, 250)


def test_delete_and_recreate(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    append(log, numbered(1, 100))
    tail, sink = Tail(transport, str(log), "s"), Sink()
    sink.poll(tail)
    log.unlink()
    assert sink.poll(tail) == []
    append(log, numbered(101, 110))  # shorter than before, possibly the same inode
    sink.until(tail, sink.has(110))
    assert_exactly_once(sink, 1, 110)


def test_atomic_replace(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "state.jsonl"
    append(log, numbered(1, 20))
    tail, sink = Tail(transport, str(log), "s"), Sink()
    sink.poll(tail)
    tmp = tmp_path / "state.jsonl.tmp"
    tmp.write_bytes(numbered(1, 30))  # same prefix plus new lines: only the new lines
    os.replace(tmp, log)
    sink.until(tail, sink.has(30))
    tmp.write_bytes(numbered(31, 35))  # entirely new content: the whole file, once
    os.replace(tmp, log)
    sink.until(tail, sink.has(35))
    assert_exactly_once(sink, 1, 35)
    assert tail.stats.replacements == 2


def test_missing_file_appears_later(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "later" / "server.log"
    tail, sink = Tail(transport, str(log), "s"), Sink()
    assert sink.poll(tail) == []
    assert sink.state is None
    log.parent.mkdir()
    append(log, numbered(1, 5))
    sink.until(tail, sink.has(5))
    assert_exactly_once(sink, 1, 5)


def test_ten_megabyte_line_is_truncated_and_counted(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    big = b"00000002 " + b"x" * (10 * 1024 * 1024) + b"\n"
    append(log, numbered(1, 1))
    tail, sink = Tail(transport, str(log), "s", read_chunk=1 << 20), Sink()
    sink.poll(tail)
    append(log, big[: 3 * 1024 * 1024])  # the big line arrives in pieces
    sink.poll(tail)
    append(log, big[3 * 1024 * 1024 :] + numbered(3, 4))
    sink.until(tail, sink.has(4))
    assert_exactly_once(sink, 1, 4)
    assert len(sink.lines[1].text) == tail.max_line
    assert tail.stats.truncated_lines == 1
    assert sink.lines[2].offset == len(numbered(1, 1)) + len(big) + len(numbered(3, 3))


def test_invalid_utf8_and_crlf(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    euro = "€".encode()
    append(log, b"00000001 bad \xff\xfe bytes\r\n00000002 split " + euro[:1])
    tail, sink = Tail(transport, str(log), "s"), Sink()
    sink.poll(tail)
    append(log, euro[1:] + b" sign\n")
    sink.poll(tail)
    assert [line.text for line in sink.lines] == ["00000001 bad \ufffd\ufffd bytes", "00000002 split € sign"]
    assert tail.stats.replaced_lines == 1
    assert sink.state is not None
    assert sink.state.offset == log.stat().st_size


def test_tiny_files_with_identical_heads_are_separate(transport: Transport, tmp_path: Path) -> None:
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    append(a, b"00000001 x\n")
    append(b, b"00000001 x\n")
    sink_a, sink_b = Sink(), Sink()
    tail_a, tail_b = Tail(transport, str(a), "a"), Tail(transport, str(b), "b")
    sink_a.poll(tail_a)
    sink_b.poll(tail_b)
    append(b, b"00000002 y\n")
    sink_a.poll(tail_a)
    sink_b.poll(tail_b)
    assert sink_a.seqs() == [1]
    assert sink_b.seqs() == [1, 2]


def test_symlink_retargeted(transport: Transport, tmp_path: Path) -> None:
    a, b, current = tmp_path / "a.log", tmp_path / "b.log", tmp_path / "current.log"
    append(a, numbered(1, 10))
    current.symlink_to(a)
    tail, sink = Tail(transport, str(current), "s", rotate_wait=0.3), Sink()
    sink.poll(tail)
    append(a, numbered(11, 15))  # late writes to the old target are still drained
    append(b, numbered(16, 20))
    tmp = tmp_path / "current.tmp"
    tmp.symlink_to(b)
    os.replace(tmp, current)
    sink.until(tail, lambda s: len(s.lines) >= 20 and s.state is not None and s.state.draining is None)
    assert_exactly_once(sink, 1, 20)
