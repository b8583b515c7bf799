"""Where to connect: `ssh = "user@host:port"` or an alias from ~/.ssh/config.

paramiko parses ssh_config but acts on none of it, so the values that matter to us (HostName,
User, Port, IdentityFile, ProxyJump) are resolved here once, into a plain value the transport uses.
Explicit parts of the spec win over the config file, as with OpenSSH's command line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import paramiko

from kvwatch.collectors.base import CollectorError
from kvwatch.collectors.ssh.config_file import read_ssh_config

DEFAULT_SSH_CONFIG = "~/.ssh/config"
MAX_JUMPS = 8


@dataclass(frozen=True, slots=True)
class SshTarget:
    """One host to reach. `jumps` are the ProxyJump hops, outermost first."""

    host: str
    port: int = 22
    user: str | None = None
    identity_files: tuple[str, ...] = ()
    known_hosts: str | None = None
    jumps: tuple[SshTarget, ...] = field(default=())

    @property
    def label(self) -> str:
        who = f"{self.user}@" if self.user else ""
        return f"{who}{self.host}:{self.port}"

    @classmethod
    def parse(
        cls,
        spec: str,
        *,
        identity_file: str | None = None,
        known_hosts: str | None = None,
        ssh_config: str | None = DEFAULT_SSH_CONFIG,
    ) -> SshTarget:
        """Resolve `user@host:port` or an alias; raises CollectorError naming the bad spec."""
        config = _load_config(ssh_config)
        return _resolve(spec, config, identity_file, known_hosts, depth=0)


def split_spec(spec: str) -> tuple[str | None, str, int | None]:
    """`[user@]host[:port]`, host may be `[v6]`; returns (user, host, port)."""
    text = spec.strip()
    if not text or any(ch.isspace() for ch in text):
        raise CollectorError(f"ssh target {spec!r}: expected user@host:port or an ssh_config alias")
    user: str | None = None
    if "@" in text:
        user, text = text.rsplit("@", 1)
    port: int | None = None
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        if rest.startswith(":"):
            port = _port(spec, rest[1:])
    elif text.count(":") == 1:
        host, raw = text.split(":")
        port = _port(spec, raw)
    else:
        host = text
    if not host or user == "":
        raise CollectorError(f"ssh target {spec!r}: expected user@host:port or an ssh_config alias")
    if host.startswith("-") or (user or "").startswith("-"):
        raise CollectorError(f"ssh target {spec!r}: a host or user may not start with '-'")
    return user, host, port


def _port(spec: str, raw: str) -> int:
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise CollectorError(f"ssh target {spec!r}: bad port {raw!r}")
    return int(raw)


def _load_config(path: str | None) -> paramiko.SSHConfig | None:
    if path is None:
        return None
    full = os.path.expanduser(path)
    if not os.path.exists(full):
        return None
    try:
        return read_ssh_config(full)
    except (OSError, paramiko.SSHException, ValueError) as exc:
        raise CollectorError(f"ssh config {full}: {exc}") from exc


def _resolve(
    spec: str,
    config: paramiko.SSHConfig | None,
    identity_file: str | None,
    known_hosts: str | None,
    depth: int,
) -> SshTarget:
    if depth > MAX_JUMPS:
        raise CollectorError(f"ssh target {spec!r}: ProxyJump chain longer than {MAX_JUMPS}")
    user, alias, port = split_spec(spec)
    found = config.lookup(alias) if config is not None else {}
    if found.get("proxycommand") and str(found["proxycommand"]).lower() != "none":
        raise CollectorError(f"ssh target {spec!r}: ProxyCommand is not supported (kvwatch runs no command from "
                             "an ssh config); use ProxyJump")
    host = str(found.get("hostname", alias))
    if port is None:
        port = _port(spec, str(found["port"])) if "port" in found else 22
    user = user or _opt(found.get("user"))
    files: list[str] = [identity_file] if identity_file else list(found.get("identityfile", []))
    jumps: list[SshTarget] = []
    hop_spec = _opt(found.get("proxyjump"))
    if hop_spec and hop_spec.lower() != "none":
        for hop in hop_spec.split(","):
            jumps.extend(_flatten(_resolve(hop, config, None, known_hosts, depth + 1)))
    return SshTarget(
        host=host,
        port=port,
        user=user,
        identity_files=tuple(os.path.expanduser(f) for f in files),
        known_hosts=os.path.expanduser(known_hosts) if known_hosts else None,
        jumps=tuple(jumps),
    )


def _flatten(target: SshTarget) -> list[SshTarget]:
    """A hop that itself has ProxyJump is reached through its own hops first."""
    if not target.jumps:
        return [target]
    bare = SshTarget(target.host, target.port, target.user, target.identity_files, target.known_hosts)
    return [*target.jumps, bare]


def _opt(value: object) -> str | None:
    return str(value) if value else None
