"""Typed models of kvwatch.toml's tables (pydantic), and the one place their errors become ConfigError.

    settings = validated(CompareTable, table, f"{config.path}: hosts['gpu1'].compare")

A table's model says which keys it takes and what type each value has; `validated` turns pydantic's
ValidationError into the project's one-line error that names the file and the field:

    kvwatch.toml: hosts['gpu1'].compare.min_stady: unknown setting (allowed: min_steady)
    kvwatch.toml: alerts.token_usage_high.fire_at: expected a ratio between 0 and 1, got 1.5

Values are checked by the validators below (`Ratio`, `Duration`, ...), which say what was expected
in kvwatch's words rather than pydantic's. Tables are validated one at a time (a preset, a veto, a
rule's settings), so every unknown key is reported with its own table's wording (`unknown`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, NoReturn, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError
from pydantic_core import ErrorDetails, PydanticCustomError

from kvwatch.app.errors import ConfigError

DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
KVWATCH_ERROR = "kvwatch"
T = TypeVar("T", bound="Table")


class Table(BaseModel):
    """A table of kvwatch.toml: unknown keys are errors, and nothing it holds is edited afterwards.

    `unknown` is the message for an unknown key: `{key}` the first one and `{keys}` all of them
    (sorted), `{allowed}` the table's keys (`{allowed_sorted}` sorted); it follows the table's label
    and a colon, or directly when it starts with `.` (the key is part of the field's name)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    unknown: ClassVar[str] = ".{key}: unknown key (allowed: {allowed})"

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        return tuple(info.alias or name for name, info in cls.model_fields.items())

    def given(self) -> dict[str, Any]:
        """The keys the table sets, by field name (`for` is `for_`), without the defaults."""
        return self.model_dump(exclude_unset=True)


def invalid(message: str) -> NoReturn:
    """Refuse a value with kvwatch's own words (what was expected, and what was given)."""
    raise PydanticCustomError(KVWATCH_ERROR, "{message}", {"message": message})


def validated(model: type[T], data: object, label: str) -> T:
    """`data` as `model`, or ConfigError: one line, `label` (file and table) and the field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_one_line(model, exc, label)) from None


def _one_line(model: type[Table], exc: ValidationError, label: str) -> str:
    errors = exc.errors()
    extra = sorted(str(e["loc"][-1]) for e in errors if e["type"] == "extra_forbidden")
    if extra:  # unknown keys first, then missing ones, then the first bad value: the order they were checked in
        allowed = model.keys()
        text = model.unknown.format(key=extra[0], keys=", ".join(extra), allowed=", ".join(allowed),
                                    allowed_sorted=", ".join(sorted(allowed)))
        return f"{label}{text}" if text.startswith(".") else f"{label}: {text}"
    first = next((e for e in errors if e["type"] == "missing"), errors[0])
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"])
    return f"{label}{where}: {_message(first)}"


def _message(error: ErrorDetails) -> str:
    if error["type"] == KVWATCH_ERROR:
        return str(error.get("ctx", {}).get("message", error["msg"]))
    if error["type"] in ("model_type", "dict_type", "model_attributes_type"):
        return "expected a table"
    if error["type"] == "missing":
        return "missing (required)"
    return f"{error['msg'][:1].lower()}{error['msg'][1:]}, got {error['input']!r}"


def number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        invalid(f"expected a number, got {type(value).__name__} {value!r}")
    return float(value)


def duration_seconds(value: Any) -> float:
    """Seconds from a number or a Prometheus-style string ("90s", "2m", "1h30m")."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    if isinstance(value, str) and value and DURATION_RE.sub("", value) == "":
        return sum(float(n) * UNIT_S[unit] for n, unit in DURATION_RE.findall(value))
    invalid(f'expected a duration (seconds, or like "90s", "2m"), got {value!r}')


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        invalid(f"expected true or false, got {value!r}")
    return value


def _ratio(value: Any) -> float:
    if not 0 <= number(value) <= 1:
        invalid(f"expected a ratio between 0 and 1, got {value!r}")
    return float(value)


def _percent(value: Any) -> float:
    if not 0 < number(value) < 100:
        invalid(f"expected a percentage between 0 and 100, got {value!r}")
    return float(value)


def _count(value: Any) -> int:
    if not isinstance(value, int) or number(value) < 1:
        number(value)
        invalid(f"expected a whole number >= 1, got {value!r}")
    return int(value)


def _not_negative(value: Any) -> float:
    if number(value) < 0:
        invalid(f"must not be negative, got {value!r}")
    return float(value)


def positive(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        invalid(f"expected a positive number, got {value!r}")
    return float(value)


def _text(value: Any) -> str:
    return str(value)


Flag = Annotated[bool, BeforeValidator(_flag)]
Duration = Annotated[float, BeforeValidator(duration_seconds)]
Ratio = Annotated[float, BeforeValidator(_ratio)]
Percent = Annotated[float, BeforeValidator(_percent)]
Count = Annotated[int, BeforeValidator(_count)]
NotNegative = Annotated[float, BeforeValidator(_not_negative)]
Positive = Annotated[float, BeforeValidator(positive)]
Text = Annotated[str, BeforeValidator(_text)]  # any TOML value, as its text (a flags_schema of 0.5 is "0.5")
