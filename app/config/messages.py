"""The one place a refused kvwatch.toml value becomes a ConfigError: one line naming file, line and key.

    kvwatch.toml:14: hosts['gpu1'].compare.min_stady: unknown setting (allowed: min_steady)
    kvwatch.toml:9: alerts.token_usage_high.fire_at: expected a ratio between 0 and 1, got 1.5

The tree is validated in one go, so pydantic reports errors anywhere in it; the first unknown key is
shown with the wording of the table that holds it (`Table.unknown`), found by walking the models
along the error's location. A host is named by its `name` (`hosts['gpu1']`), anything else in a list
by its index.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from kvwatch.app.config.tables import KVWATCH_ERROR, Table
from kvwatch.app.errors import ConfigError

T = TypeVar("T", bound=Table)
Loc = tuple[int | str, ...]
LineOf = Callable[[Loc], int | None]


def validated(model: type[T], data: object, label: str) -> T:
    """`data` as `model`, or ConfigError: `label` (file and table) followed by the field. A label that
    is empty or ends in ": " (a file only) is followed by the key path as it is at the top."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        detail, _ = explain(model, exc, data)
        if not label or label.endswith(": "):
            detail = detail.removeprefix(".").removeprefix(": ")
        raise ConfigError(f"{label}{detail}") from None


def validated_file(model: type[T], data: object, where: str, line_of: LineOf | None = None) -> T:
    """`data`, a whole file, as `model`; the error names the file, the key's line when known, and the key."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        detail, loc = explain(model, exc, data)
        raise ConfigError(at(where, loc, detail, line_of)) from None


def at(where: str, loc: Loc, detail: str, line_of: LineOf | None) -> str:
    """`where:line: key.path: message` from a detail that follows a label (`.a.b: ...` or `: ...`)."""
    line = line_of(loc) if line_of is not None else None
    return f"{where}{'' if line is None else f':{line}'}: {detail.removeprefix('.').removeprefix(': ')}"


def explain(model: type[Table], exc: ValidationError, data: object) -> tuple[str, Loc]:
    """What follows the label (`.compare.min_stady: unknown setting ...`), and where in the tree it is.
    Unknown keys first, then missing ones, then the first bad value: the order a reader fixes them."""
    errors = exc.errors()
    extras = [e for e in errors if e["type"] == "extra_forbidden"]
    if extras:
        parent = tuple(extras[0]["loc"][:-1])
        keys = sorted(str(e["loc"][-1]) for e in extras if tuple(e["loc"][:-1]) == parent)
        table = model_at(model, parent) or model
        allowed = table.keys()
        text = table.unknown.format(key=keys[0], keys=", ".join(keys), allowed=", ".join(allowed),
                                    allowed_sorted=", ".join(sorted(allowed)))
        head = path_text(parent, data)
        return (f"{head}{text}" if text.startswith(".") else f"{head}: {text}"), (*parent, keys[0])
    first = next((e for e in errors if e["type"] == "missing"), errors[0])
    loc = tuple(first["loc"])
    return f"{path_text(loc, data)}: {_message(first)}", loc


def path_text(loc: Loc, data: object) -> str:
    """`.hosts['gpu1'].compare`: a list item by its `name` when it has one, else by its index."""
    out, node = "", data
    for part in loc:
        if isinstance(part, int):
            node = node[part] if isinstance(node, list) and 0 <= part < len(node) else None
            name = node.get("name") if isinstance(node, Mapping) else None
            out += f"[{name!r}]" if isinstance(name, str) else f"[{part}]"
        else:
            node = node.get(part) if isinstance(node, Mapping) else None
            out += f".{part}"
    return out


def model_at(model: type[Table], loc: Loc) -> type[Table] | None:
    """The table model that reads the value at `loc` (through fields, lists and tables of tables)."""
    current: Any = model
    for part in loc:
        current = _bare(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            info = next((f for name, f in current.model_fields.items() if part in (name, f.alias)), None)
            if info is None:
                return None
            current = info.annotation
        elif get_origin(current) in (dict, Mapping) and isinstance(part, str):
            current = get_args(current)[1]
        elif get_origin(current) is tuple and isinstance(part, int):
            current = get_args(current)[0]
        else:
            return None
    current = _bare(current)
    return current if isinstance(current, type) and issubclass(current, Table) else None


def _bare(kind: Any) -> Any:
    """`kind` without Annotated's metadata and without `| None`."""
    if get_origin(kind) is Annotated:
        return _bare(get_args(kind)[0])
    if get_origin(kind) in (Union, types.UnionType):
        return _bare(next(arg for arg in get_args(kind) if arg is not type(None)))
    return kind


def _message(error: ErrorDetails) -> str:
    if error["type"] == KVWATCH_ERROR:
        return str(error.get("ctx", {}).get("message", error["msg"]))
    if error["type"] in ("model_type", "dict_type", "model_attributes_type"):
        return "expected a table"
    if error["type"] == "missing":
        return "missing (required)"
    return f"{error['msg'][:1].lower()}{error['msg'][1:]}, got {error['input']!r}"
