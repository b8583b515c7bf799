"""~/.ssh/config is read, never run: `Match exec` never executes, ProxyCommand is refused by name,
`Match` blocks do not break `kvwatch init`, and a target cannot smuggle an ssh option."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvwatch.app.commands.init import ssh_hosts
from kvwatch.collectors.base import CollectorError
from kvwatch.collectors.ssh.config_file import host_patterns, without_match_exec
from kvwatch.collectors.ssh.target import SshTarget, split_spec


def config_with_match_exec(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "ran"
    config = tmp_path / "config"
    config.write_text(
        "Host gpu1\n  HostName 10.0.0.5\n  User root\n\n"
        f'Match host gpu1 exec "touch {marker}"\n  Port 2222\n\n'
        f"Match exec=touch\\ {marker}\n  User nobody\n\n"
        "Match originalhost gpu2\n  Port 2200\n\n"
        "Host gpu2 gpu*\n  HostName 10.0.0.6\n"
    )
    return config, marker


def test_match_exec_lines_become_blocks_that_match_nothing() -> None:
    text, skipped = without_match_exec('Match host a exec "x"\n  Port 1\nmatch  !exec y\nMatch host exec-box\n')
    assert skipped == 2
    assert text.splitlines() == ["Host kvwatch-never-matches.invalid", "  Port 1",
                                 "Host kvwatch-never-matches.invalid", "Match host exec-box"]


def test_a_target_never_runs_match_exec(tmp_path: Path) -> None:
    config, marker = config_with_match_exec(tmp_path)
    target = SshTarget.parse("gpu1", ssh_config=str(config))
    assert (target.host, target.port, target.user) == ("10.0.0.5", 22, "root")  # the exec block did not apply
    assert not marker.exists()


def test_plain_match_blocks_still_apply(tmp_path: Path) -> None:
    config, _ = config_with_match_exec(tmp_path)
    assert SshTarget.parse("gpu2", ssh_config=str(config)).port == 2200


def test_proxycommand_is_refused_by_name(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text("Host hidden\n  HostName 10.0.0.9\n  ProxyCommand ssh -W %h:%p bastion\n")
    with pytest.raises(CollectorError, match=r"ProxyCommand is not supported.*ProxyJump"):
        SshTarget.parse("hidden", ssh_config=str(config))
    config.write_text("Host open\n  ProxyCommand none\n")
    assert SshTarget.parse("open", ssh_config=str(config)).host == "open"


@pytest.mark.parametrize("spec", ["-oProxyCommand=touch_x", "root@-evil", "-x@host"])
def test_a_host_or_user_starting_with_a_dash_is_refused(spec: str) -> None:
    with pytest.raises(CollectorError, match="may not start with '-'"):
        split_spec(spec)


def test_init_lists_hosts_of_a_config_with_match_blocks(tmp_path: Path) -> None:
    config, marker = config_with_match_exec(tmp_path)
    hosts = {h.alias: h for h in ssh_hosts(config)}
    assert sorted(hosts) == ["gpu1", "gpu2"]  # `gpu*` is a pattern, not a host
    assert (hosts["gpu1"].hostname, hosts["gpu1"].port) == ("10.0.0.5", "22")
    assert hosts["gpu2"].port == "2200"
    assert not marker.exists()


def test_host_patterns_read_every_host_line() -> None:
    text = 'Host a b\nMatch host c\n  Port 1\nHost=d\nhost a e\nHost "h100 box" !x\n'
    assert host_patterns(text) == ["a", "b", "d", "e", "h100 box", "!x"]
