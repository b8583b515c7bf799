"""The controller's tables: `[hosts.presets.NAME]` / `[presets.NAME]`, `[[hosts.vetoes]]` / `[[vetoes]]`
and `[hosts.restart]` (what they mean: app/controller/policy.py, which turns them into a host's
ControllerConfig)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import BeforeValidator, ConfigDict, Field, model_validator

from kvwatch.app.config.tables import Positive, Table, Text, invalid, positive


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
    flag: str
    reason: Text
    value: Text = "*"

    @model_validator(mode="before")
    @classmethod
    def _has_flag_and_reason(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("flag"), str) or not data.get("reason"):
            invalid("needs `flag` and `reason` (and `value`, a glob; default any value)")
        return data


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
