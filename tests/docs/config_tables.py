"""Every table of kvwatch.toml and the model that reads it, for the docs' tests.

A table added to the code and not listed here is caught by `test_every_model_is_listed`; a table listed
here and not in docs/config.md by the doc's own test.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import PydanticUndefined

from kvwatch.app.config import HOST_TABLES, Config, ConfigFile, HostConfig, ServerConfig
from kvwatch.app.config.alerts import SETTINGS, AlertsTable
from kvwatch.app.config.campaign import CampaignTable
from kvwatch.app.config.compare import CompareTable
from kvwatch.app.config.controller import ControllerTables, PresetTable, RestartTable, VetoTable
from kvwatch.app.config.tables import Table

# doc heading -> (model, keys documented as tables of their own rather than rows)
TABLES: dict[str, tuple[type[Table], frozenset[str]]] = {
    "[server]": (ServerConfig, frozenset()),
    "[[hosts]]": (HostConfig, frozenset(HOST_TABLES)),
    "[presets.NAME]": (PresetTable, frozenset()),
    "[[vetoes]]": (VetoTable, frozenset()),
    "[hosts.restart]": (RestartTable, frozenset()),
    "[hosts.compare]": (CompareTable, frozenset()),
    "[hosts.campaign]": (CampaignTable, frozenset()),
    "[alerts]": (AlertsTable, frozenset(SETTINGS)),
    **{f"[alerts.{rule}]": (model, frozenset()) for rule, model in SETTINGS.items()},
}
TOP_LEVEL = ConfigFile
# Models that read no table of their own: the controller's tables of one host read apart from the file
# (parse_controller_config), and the file with where it was read from.
NOT_TABLES: frozenset[type[Table]] = frozenset({ControllerTables, Config})


def shown(value: Any) -> str:
    """A default as docs/config.md writes it (TOML spelling; `required` when there is none)."""
    if value is PydanticUndefined:
        return "required"
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | frozenset | list):
        return "[" + ", ".join(shown(item) for item in sorted(value)) + "]"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, float):
        return format(value, "g")  # 120.0 and 120 are the same number of seconds
    return repr(value)


def rows(model: type[Table], nested: frozenset[str]) -> dict[str, str]:
    """key -> its default as shown, for each key of `model` written as a row."""
    out: dict[str, str] = {}
    for name, info in model.model_fields.items():
        key = info.alias or name
        if key in nested:
            continue
        default = info.get_default(call_default_factory=True) if info.default_factory else info.default
        out[key] = shown(default)
    return out
