"""The controller's tables: `[hosts.presets.NAME]` / `[presets.NAME]`, `[[hosts.vetoes]]` / `[[vetoes]]`
and `[hosts.restart]` (what they mean: app/controller/policy.py); and ControllerConfig, what one host's
controller obeys: those tables themselves, the shared ones laid under the host's own, and the
restart paths that default from the host."""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
import shlex
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from kvwatch.app.config.tables import Positive, Table, Text, invalid, positive
from kvwatch.app.flags.schema import FlagError, FlagValue, Schema

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.DOTALL)


class PresetTable(Table):
    """`[hosts.presets.<name>]` or `[presets.<name>]`."""

    unknown: ClassVar[str] = "unknown key(s) {keys}"
    flags: dict[str, Any]
    description: Text = ""

    @model_validator(mode="before")
    @classmethod
    def _has_flags(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("flags"), dict):
            invalid("expected a `flags` table")
        return data


class VetoTable(Table):
    """`[[hosts.vetoes]]` or `[[vetoes]]`. Other keys are ignored, as they always were."""

    model_config = ConfigDict(extra="ignore")
    flag: Annotated[str, AfterValidator(lambda flag: flag.removeprefix("--"))]  # by name, as schemas have it
    reason: Text
    value: Text = "*"

    @model_validator(mode="before")
    @classmethod
    def _has_flag_and_reason(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("flag"), str) or not data.get("reason"):
            invalid("needs `flag` and `reason` (and `value`, a glob; default any value)")
        return data

    def matches(self, schema: Schema, flags: Mapping[str, FlagValue]) -> bool:
        """Do `flags` (a run's, by canonical name) hold a value this veto rules out?"""
        try:
            canonical = schema.resolve(self.flag)[0].name
        except FlagError:
            return False  # not a flag of this version: nothing to veto
        value = flags.get(canonical)
        if value is None:
            return False
        items = value if isinstance(value, list) else [value]
        return any(fnmatch.fnmatchcase(_text(item), self.value) for item in items)


def _text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _restarts(value: Any) -> int:
    return int(positive(value))


def _flag_names(value: Any) -> frozenset[str]:
    if not isinstance(value, list | tuple | frozenset) or not all(isinstance(n, str) and n.strip("-") for n in value):
        invalid("expected a list of flag names")
    return frozenset(n.removeprefix("--") for n in value)


class RestartTable(Table):
    """`[hosts.restart]`; the defaults of `python`, `state_dir` and `log_dir` depend on the host."""

    unknown: ClassVar[str] = "unknown key(s) {keys}"
    python: Text | None = None
    flags_schema: Text = "remote"
    state_dir: Text | None = None
    log_dir: Text | None = None
    stop_timeout: Positive = 120.0
    ready_timeout: Positive = 1800.0
    poll_interval: Positive = 2.0
    max_restarts: Annotated[int, BeforeValidator(_restarts)] = 3
    restart_window: Positive = 600.0
    allow_flags: Annotated[frozenset[str], BeforeValidator(_flag_names)] = frozenset()


def _preset_tables(value: Any) -> Any:
    if not isinstance(value, dict):
        invalid("expected tables [hosts.presets.<name>]")
    return value


def _veto_list(value: Any) -> Any:
    if not isinstance(value, list | tuple):
        invalid("expected [[hosts.vetoes]] entries")
    return value


Presets = Annotated[dict[str, PresetTable], BeforeValidator(_preset_tables)]
Vetoes = Annotated[tuple[VetoTable, ...], BeforeValidator(_veto_list)]


class ControllerTables(Table):
    """The controller's tables of one host, read on their own (parse_controller_config's raw tables)."""

    model_config = ConfigDict(extra="ignore")
    presets: Presets = Field(default_factory=dict)
    vetoes: Vetoes = ()
    restart: RestartTable = Field(default_factory=RestartTable)


class ControllerConfig(BaseModel):
    """What one host's controller obeys (built by app/controller/policy.py's controller_config): its
    name, launch and server log, its presets and vetoes (shared ones included) and its
    `[hosts.restart]` table as written. `python`, `state_dir` and `log_dir` are the values in force:
    worked out from those fields on every read, never stored beside them, so a copy with another
    launch or table (model_copy, or a new ControllerConfig) cannot keep stale or empty paths."""

    model_config = ConfigDict(frozen=True)
    host: str
    launch: str
    server_log: str | None = None
    presets: dict[str, PresetTable] = Field(default_factory=dict)
    vetoes: tuple[VetoTable, ...] = ()
    restart: RestartTable = Field(default_factory=RestartTable)

    @property
    def allow_flags(self) -> frozenset[str]:
        """Guarded flags (app/flags/exposure.py) requests may change."""
        return self.restart.allow_flags

    @property
    def python(self) -> str:
        """`restart.python`, else the launch's own interpreter."""
        return _launch_python(self.launch) if self.restart.python is None else self.restart.python

    @property
    def state_dir(self) -> str:
        """`restart.state_dir`, else a directory named after the host."""
        return f"~/.kvwatch/{self.host}" if self.restart.state_dir is None else self.restart.state_dir

    @property
    def log_dir(self) -> str:
        """`restart.log_dir`, else the server log's directory (the state directory's `logs` without one)."""
        if self.restart.log_dir is not None:
            return self.restart.log_dir
        return posixpath.dirname(self.server_log) if self.server_log else f"{self.state_dir}/logs"

    def veto_for(self, schema: Schema, flags: Mapping[str, FlagValue]) -> VetoTable | None:
        return next((veto for veto in self.vetoes if veto.matches(schema, flags)), None)


def _launch_python(launch: str) -> str:
    try:
        tokens = shlex.split(launch)
    except ValueError:
        return "python3"
    program = next((t for t in tokens if not _ASSIGNMENT.fullmatch(t)), "")
    return program if os.path.basename(program).startswith("python") else "python3"
