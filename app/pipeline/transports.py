"""The one place a host's config becomes a Transport."""

from __future__ import annotations

from kvwatch.app.config import HostConfig
from kvwatch.collectors.base import Transport
from kvwatch.collectors.local import LocalTransport


def open_transport(host: HostConfig) -> Transport:
    if host.is_local:
        return LocalTransport()
    from kvwatch.collectors.ssh import SshTransport
    from kvwatch.collectors.ssh_target import SshTarget

    target = SshTarget.parse(host.ssh, identity_file=host.identity_file, known_hosts=host.known_hosts)
    transport: Transport = SshTransport(target, name=host.name).connect()
    return transport
