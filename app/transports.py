"""A host's config as a connected Transport, through the collectors' registry by name."""

from __future__ import annotations

from kvwatch.app.config import HostConfig
from kvwatch.collectors.base import Transport
from kvwatch.collectors.transports import TransportSpec
from kvwatch.collectors.transports import open_transport as open_by_kind


def open_transport(host: HostConfig) -> Transport:
    spec = TransportSpec(host.name, host.ssh, host.identity_file, host.known_hosts)
    return open_by_kind(host.transport, spec)
