"""The transports by name: `local` (this machine) and `ssh` (paramiko). The one place a host's
connection settings become a `Transport`; a new transport is one entry in `TRANSPORTS`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from kvwatch.collectors.base import CollectorError, Transport
from kvwatch.collectors.local import LocalTransport


@dataclass(frozen=True, slots=True)
class TransportSpec:
    """How to reach one host: its name, and for SSH the target and key files."""

    name: str
    target: str = ""
    identity_file: str | None = None
    known_hosts: str | None = None


def _open_local(spec: TransportSpec) -> Transport:
    return LocalTransport()


def _open_ssh(spec: TransportSpec) -> Transport:
    # imported here: paramiko costs ~0.2 s at start, and a local-only demo never needs it
    from kvwatch.collectors.ssh.target import SshTarget
    from kvwatch.collectors.ssh.transport import SshTransport

    target = SshTarget.parse(spec.target, identity_file=spec.identity_file, known_hosts=spec.known_hosts)
    return SshTransport(target, name=spec.name).connect()


TRANSPORTS: Mapping[str, Callable[[TransportSpec], Transport]] = MappingProxyType({
    "local": _open_local,
    "ssh": _open_ssh,
})


def open_transport(kind: str, spec: TransportSpec) -> Transport:
    """A connected transport of this kind; CollectorError (naming the known kinds) for an unknown one."""
    try:
        opener = TRANSPORTS[kind]
    except KeyError:
        known = ", ".join(sorted(TRANSPORTS))
        raise CollectorError(f"host {spec.name!r}: unknown transport {kind!r} (known: {known})") from None
    return opener(spec)
