"""The whole of kvwatch.toml as one typed tree, validated in one go when it is read.

    config = parse_config(tomllib.loads(text), "kvwatch.toml", KeyLines(text))
    config.hosts[0].compare.min_steady       # seconds, already checked

Every table is a model field (app/config/server.py, host.py, controller.py, compare.py, campaign.py,
alerts.py), so a typo anywhere, `[hosts.compare]` included, is an error at start naming file, line
and key path; nothing downstream receives a raw table to check late. The models are frozen: a
changed config is a new tree (`model_copy(update=...)` with validated parts, or parse_config again).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BeforeValidator, Field, PrivateAttr

from kvwatch.app.config.alert_rules import DEFAULT_RULES
from kvwatch.app.config.alerts import AlertsTable, misordered, rule_params
from kvwatch.app.config.controller import Presets, Vetoes
from kvwatch.app.config.host import HostConfig
from kvwatch.app.config.messages import LineOf, Loc, at, validated_file
from kvwatch.app.config.server import ServerConfig
from kvwatch.app.config.tables import Table, invalid
from kvwatch.app.errors import ConfigError


def _host_list(value: Any) -> Any:
    if not isinstance(value, list | tuple):
        invalid("expected [[hosts]] tables")
    return value


def _unique_names(hosts: tuple[HostConfig, ...]) -> tuple[HostConfig, ...]:
    names = [h.name for h in hosts]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        invalid(f"duplicate name {duplicates[0]!r}")
    return hosts


class ConfigFile(Table):
    """The file's top level: the tables it may have."""

    unknown: ClassVar[str] = "{key}: unknown key (allowed: {allowed_sorted})"
    server: ServerConfig = Field(default_factory=ServerConfig)
    hosts: Annotated[tuple[HostConfig, ...], BeforeValidator(_host_list), AfterValidator(_unique_names)] = ()
    presets: Presets = Field(default_factory=dict)  # for every host; a host's own preset of the name wins
    vetoes: Vetoes = ()  # for every host, added to each host's own
    alerts: AlertsTable = Field(default_factory=AlertsTable)


class Config(ConfigFile):
    """The file's tree, and where it was read from (`path` names the file in every later message)."""

    path: str = "<memory>"
    # where each key is in the file's text (app/config/lines.py), for checks made after parsing
    _line_of: LineOf | None = PrivateAttr(default=None)

    def error_at(self, loc: Loc, detail: str) -> str:
        """`file:LINE: key.path: message` for the key at `loc`; `detail` is `.key.path: message`."""
        return at(self.path, loc, detail, self._line_of)


def parse_config(data: dict[str, Any], where: str = "<memory>", line_of: LineOf | None = None) -> Config:
    """`data` (a parsed kvwatch.toml) as the typed tree, or ConfigError naming `where`, the line when
    `line_of` knows it, and the key path."""
    tree = validated_file(ConfigFile, data, where, line_of)
    _check_alert_thresholds(tree, data, where, line_of)
    config = Config.model_validate({**{key: getattr(tree, key) for key in ConfigFile.model_fields}, "path": where})
    config._line_of = line_of
    return config


def _check_alert_thresholds(tree: ConfigFile, data: dict[str, Any], where: str, line_of: LineOf | None) -> None:
    """A rule's thresholds in order, in `[alerts]` and with each host's table laid over it: a host's
    `stay_at` above the global `fire_at` is as wrong as both in one table."""
    scopes: list[tuple[Loc, str, tuple[Any, ...]]] = [(("alerts",), "alerts", (tree.alerts,))]
    for index, host in enumerate(tree.hosts):
        scopes.append((("hosts", index, "alerts"), f"hosts[{host.name!r}].alerts", (tree.alerts, host.alerts)))
    for loc, label, tables in scopes:
        for rule in DEFAULT_RULES:
            wrong = misordered(rule_params(rule, *tables))
            if wrong is not None:
                key_loc = (*loc, rule.name, wrong[0])
                raise ConfigError(at(where, key_loc, f".{label}.{rule.name}.{wrong[0]}: {wrong[1]}", line_of))
