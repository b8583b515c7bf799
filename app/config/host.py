"""One `[[hosts]]` table: where a host's logs are, how to reach it, and its own sub-tables (presets,
vetoes, restart, compare, campaign, alerts), each a model of its own: the whole host is validated
when the file is read, so a typo in `[hosts.compare]` stops the start, not a compare request later."""

from __future__ import annotations

import glob as globmod
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from kvwatch.app.config.alerts import AlertsTable
from kvwatch.app.config.campaign import CampaignTable
from kvwatch.app.config.compare import CompareTable
from kvwatch.app.config.controller import Presets, RestartTable, Vetoes
from kvwatch.app.config.server import OptInt, OptStr, Str, strings, typed
from kvwatch.app.config.tables import Table, duration_seconds, invalid
from kvwatch.collectors.base import Transport
from kvwatch.collectors.clock_infer import is_zone_name
from kvwatch.collectors.transports import TRANSPORTS, TransportSpec, open_transport

LOCAL = "local"
HOST_TABLES = ("presets", "vetoes", "alerts", "restart", "compare", "campaign")  # documented as tables of their own


def _outputs(value: Any) -> tuple[str, ...]:
    patterns = strings(value, "expected a list of glob strings")
    for pattern in patterns:
        if not pattern:
            invalid("expected a list of glob strings")
        if globmod.has_magic(pattern) and ("[" in pattern and "]" not in pattern.split("[", 1)[1]):
            invalid(f"bad glob {pattern!r} (unclosed '[')")
    return patterns


def _positive_count(value: int | None) -> int | None:
    if value is not None and value <= 0:
        invalid(f"must be positive, got {value}")
    return value


GPU_INTERVAL_S = (0.1, 3600.0)  # nvidia-smi -lms takes milliseconds; an hour is the longest that still says much


def _gpu_interval(value: Any) -> float:
    seconds = duration_seconds(value)
    low, high = GPU_INTERVAL_S
    if not low <= seconds <= high:
        invalid(f"must be between {low:g} s and {high:g} s, got {value!r}")
    return seconds


def _zone(value: str | None) -> str | None:
    if value is not None and not is_zone_name(value):
        invalid(f'unknown zone {value!r} (an IANA name such as "Asia/Shanghai")')
    return value


def _transport(value: Any) -> str:
    if value not in TRANSPORTS:
        invalid(f"unknown transport {value!r} (allowed: {', '.join(sorted(TRANSPORTS))})")
    return str(value)


class HostConfig(Table):
    """One `[[hosts]]` table, its fields in the order they are checked."""

    unknown: ClassVar[str] = ".{key}: unknown key (allowed: {allowed_sorted})"
    outputs: Annotated[tuple[str, ...], BeforeValidator(_outputs)] = ()  # checked before the required keys' types
    target_completions: Annotated[int | None, typed(int, optional=True), AfterValidator(_positive_count)] = None
    name: Str
    ssh: Str
    server_log: Str
    # "ssh" or "local" (collectors/transports.py); when not given, `ssh = "local"` means local
    transport: Annotated[str, BeforeValidator(_transport)] = "ssh"
    client_log: OptStr = None
    identity_file: OptStr = None
    known_hosts: OptStr = None
    launch: OptStr = None
    metrics_port: OptInt = None
    gpu: Annotated[bool, typed(bool)] = False
    gpu_interval: Annotated[float, BeforeValidator(_gpu_interval)] = 1.0  # seconds between nvidia-smi samples
    timezone: Annotated[str | None, typed(str, optional=True), AfterValidator(_zone)] = None  # None: detected
    group: OptStr = None  # the job the host's run belongs to: the fleet view totals by group
    presets: Presets = Field(default_factory=dict)
    vetoes: Vetoes = ()
    alerts: AlertsTable = Field(default_factory=AlertsTable)
    restart: RestartTable = Field(default_factory=RestartTable)
    compare: CompareTable = Field(default_factory=CompareTable)
    campaign: CampaignTable | None = None  # the plan `kvwatch campaign plan` starts from

    @model_validator(mode="before")
    @classmethod
    def _default_transport(cls, data: Any) -> Any:
        """The transport as it always was: `ssh = "local"` is this machine, any other target SSH."""
        if isinstance(data, dict) and "transport" not in data and data.get("ssh") == LOCAL:
            return {**data, "transport": LOCAL}
        return data

    @model_validator(mode="after")
    def _controller_needs_launch(self) -> HostConfig:
        if self.launch is None and (self.presets or self.vetoes):
            invalid("presets and vetoes need a `launch` command")
        return self

    @property
    def is_local(self) -> bool:
        return self.transport == LOCAL

    def open_transport(self) -> Transport:
        """A connected Transport to this host, through the collectors' registry by name."""
        return open_transport(self.transport, TransportSpec(self.name, self.ssh, self.identity_file, self.known_hosts))


HostTable = HostConfig  # the name the docs' table list uses
