"""SshTransport against a real OpenSSH server: host keys, auth, quoting, reads, globs."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvwatch.collectors.base import AuthFailed, HostKeyRejected, SourceMissing
from kvwatch.collectors.local import LocalTransport
from kvwatch.collectors.ssh.target import SshTarget, split_spec
from kvwatch.collectors.ssh.transport import SshTransport
from tests.fixtures.sshd import Sshd, keygen

pytestmark = pytest.mark.sshd


def test_run_quotes_every_argument(sshd: Sshd, tmp_path: Path) -> None:
    evil = ["a b", "$(touch PWNED)", "`id`", "x; touch PWNED2", "new\nline", "'quote'", "*"]
    with_dir = tmp_path
    transport = sshd.connect()
    try:
        script = 'cd "$1" && shift && printf "%s\\0" "$@"'
        done = transport.run(["sh", "-c", script, "sh", str(with_dir), *evil])
    finally:
        transport.close()
    assert done.exit_status == 0
    assert done.stdout.split(b"\0")[:-1] == [a.encode() for a in evil]
    assert not list(with_dir.iterdir())


def test_stat_read_glob_match_local(sshd: Sshd, tmp_path: Path) -> None:
    for name in ("a", "b", "c d"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "raw_responses.jsonl").write_bytes(b"x\n" * 100_000 + b"tail")
    (tmp_path / "ignored.txt").write_text("no")
    pattern = str(tmp_path / "*" / "raw_responses.jsonl")
    path = str(tmp_path / "c d" / "raw_responses.jsonl")
    local = LocalTransport()
    remote = sshd.connect()
    try:
        assert remote.glob(pattern) == local.glob(pattern)
        assert remote.stat(path) == local.stat(path)
        for offset, length in ((0, 10), (199_990, 100), (5, 300_000), (0, 1_000_000)):
            assert remote.read(path, offset, length) == local.read(path, offset, length)
        with pytest.raises(SourceMissing):
            remote.stat(str(tmp_path / "nope"))
        with pytest.raises(SourceMissing):
            remote.read(str(tmp_path / "nope"), 0, 10)
    finally:
        remote.close()


def test_unknown_host_key_is_refused(sshd: Sshd, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    with pytest.raises(HostKeyRejected, match="unknown"):
        sshd.connect(known_hosts=str(empty))


def test_changed_host_key_is_refused(sshd: Sshd, tmp_path: Path) -> None:
    keygen(tmp_path / "other")
    pub = (tmp_path / "other.pub").read_text().split()
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"[127.0.0.1]:{sshd.port} {pub[0]} {pub[1]}\n")
    with pytest.raises(HostKeyRejected, match="CHANGED"):
        sshd.connect(known_hosts=str(wrong))
    # the real file was not touched: nothing was auto-accepted
    assert pub[1] not in Path(sshd.known_hosts_path).read_text()


def test_auth_failure(sshd: Sshd, tmp_path: Path) -> None:
    keygen(tmp_path / "stranger")
    with pytest.raises(AuthFailed):
        sshd.connect(identity_file=str(tmp_path / "stranger"))


def test_spec_parsing() -> None:
    assert split_spec("root@10.1.230.174:22") == ("root", "10.1.230.174", 22)
    assert split_spec("gpu1") == (None, "gpu1", None)
    assert split_spec("u@[::1]:2200") == ("u", "::1", 2200)


def test_ssh_config_alias_and_proxyjump(sshd: Sshd, tmp_path: Path) -> None:
    cfg = tmp_path / "config"
    cfg.write_text(
        f"Host bastion\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n"
        f"  IdentityFile {sshd.key_path}\n"
        f"Host gpu1\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n"
        f"  IdentityFile {sshd.key_path}\n  ProxyJump bastion\n"
    )
    target = SshTarget.parse("gpu1", known_hosts=sshd.known_hosts_path, ssh_config=str(cfg))
    assert (target.host, target.port, target.user) == ("127.0.0.1", sshd.port, sshd.user)
    assert [hop.port for hop in target.jumps] == [sshd.port]
    transport = SshTransport(target).connect()
    try:
        assert transport.run(["echo", "through the jump"]).stdout == b"through the jump\n"
    finally:
        transport.close()


def test_stat_many_and_streaming_catch_up(sshd: Sshd, tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    big.write_bytes(bytes(range(256)) * 40_000)  # 10 MB, every byte value
    paths = [str(big), str(tmp_path / "missing"), str(tmp_path / "it's $(odd)")]
    Path(paths[2]).write_text("x")
    remote = sshd.connect()
    try:
        stats = remote.stat_many(paths)
        assert stats == LocalTransport().stat_many(paths)
        assert stats[paths[1]] is None
        chunks, pos = [], 0
        while pos < big.stat().st_size:  # like the tail: re-read a little before each chunk
            back = min(pos, 64)
            data = remote.read(str(big), pos - back, 3_000_000 + back)
            chunks.append(data[back:])
            pos += len(data) - back
        assert b"".join(chunks) == big.read_bytes()
    finally:
        remote.close()
