"""The base of every kvwatch.toml table model (pydantic), and the value types the tables share.

A table's model says which keys it takes and what type each value has. Values are checked by the
validators below (`Ratio`, `Duration`, ...), which say what was expected in kvwatch's words rather
than pydantic's; app/config/messages.py turns a refusal into the one-line ConfigError.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, NoReturn

from pydantic import BaseModel, BeforeValidator, ConfigDict
from pydantic_core import PydanticCustomError

DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
KVWATCH_ERROR = "kvwatch"


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
