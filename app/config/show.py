"""The resolved config as `kvwatch config check` prints it: every key with its value in force
(defaults filled in), in TOML, secrets (SECRET_KEYS, a database URL's password) as `***`."""

from __future__ import annotations

import json
import re
from typing import Any

from kvwatch.app.config.server import SECRET_KEYS
from kvwatch.app.config.tree import Config

MASK = "***"
_URL_PASSWORD = re.compile(r"^(\w+://[^:/@]*:)([^@]*)(@)")


def resolved(config: Config) -> dict[str, Any]:
    """The tree as plain data by TOML key (`for`, not `for_`), secrets masked."""
    data: dict[str, Any] = config.model_dump(by_alias=True, exclude={"path"})
    server = data["server"]
    for key in SECRET_KEYS:
        if server.get(key) is not None:
            server[key] = MASK
    server["database"] = _URL_PASSWORD.sub(rf"\g<1>{MASK}\g<3>", server["database"])
    # A host's [hosts.alerts] is laid over [alerts] key by key: its defaults are the global table's
    # values, so only what the host itself sets is its own.
    for host, shown in zip(config.hosts, data["hosts"], strict=True):
        shown["alerts"] = host.alerts.model_dump(by_alias=True, exclude_unset=True)
    return data


def as_toml(data: dict[str, Any]) -> str:
    """`data` in TOML: scalars first, then each table under its header (lists of tables as `[[...]]`).
    A key not set and without a default (None) is written as a comment: TOML has no null."""
    lines: list[str] = []
    _table(lines, (), data)
    return "\n".join(lines).strip() + "\n"


def _table(lines: list[str], path: tuple[str, ...], table: dict[str, Any]) -> None:
    nested = {k: v for k, v in table.items() if (isinstance(v, dict) and v) or _is_table_list(v)}
    for key, value in table.items():
        if key not in nested:
            lines.append(f"# {_key(key)} = (not set)" if value is None else f"{_key(key)} = {_value(value)}")
    for key, value in nested.items():
        here = (*path, key)
        if isinstance(value, dict):
            lines += ["", f"[{'.'.join(_key(part) for part in here)}]"]
            _table(lines, here, value)
        else:
            for item in value:
                lines += ["", f"[[{'.'.join(_key(part) for part in here)}]]"]
                _table(lines, here, item)


def _is_table_list(value: Any) -> bool:
    return isinstance(value, list | tuple) and bool(value) and all(isinstance(item, dict) for item in value)


def _key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items() if v is not None) + " }"
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value) if isinstance(value, set | frozenset) else value
        return "[" + ", ".join(_value(item) for item in items) + "]"
    return json.dumps(str(value))

