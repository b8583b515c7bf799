"""Field names and values, one rule for every parser (docs/records.md).

Names: drop a leading `#` and any `(unit)`, lowercase, non-alphanumerics -> `_`
(`gen throughput (token/s)` -> `gen_throughput`). Values: `True`/`False` -> bool, decimal integers
-> int, finite decimals -> float, `NN.NN%` -> ratio, `12.5 GB` -> 12.5 (unit dropped), `nan`/`nan%`
(SGLang's `fwd occupancy: nan%` before the device timer has a window) -> None, so a NaN is never a
number and never a string in a numeric column; anything else stays the stripped string. The same
text always gives the same value: no state, no guessing.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

_UNIT = re.compile(r"\([^)]*\)")
_NON_ALNUM = re.compile(r"[^0-9a-z]+")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_NUMBER_UNIT = re.compile(r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?) ?([A-Za-z/]{1,8})")

Value = int | float | bool | str | None
_NAN = frozenset({"nan", "nan%", "-nan", "-nan%", "NaN", "NaN%"})


@lru_cache(maxsize=4096)
def field_name(key: str) -> str:
    """`#running-req` -> `running_req`, `gen throughput (token/s)` -> `gen_throughput`."""
    key = _UNIT.sub("", key.strip().lstrip("#")).strip().lower()
    return _NON_ALNUM.sub("_", key).strip("_")


def _number(raw: str) -> int | float | None:
    if raw.isascii():
        if raw.isdigit():
            return int(raw)
        if raw.replace(".", "", 1).isdigit():  # the common `0.96`, without a regex
            number = float(raw)
            return number if math.isfinite(number) else None
    if _NUMBER.fullmatch(raw) is None:
        return None
    if "." in raw or "e" in raw or "E" in raw:
        number = float(raw)
        return number if math.isfinite(number) else None
    return int(raw)


def field_value(raw: str) -> Value:
    """The typed value of one logged value (see the module docstring)."""
    raw = raw.strip()
    if raw == "True" or raw == "False":
        return raw == "True"
    number = _number(raw)
    if number is not None:
        return number
    if raw in _NAN:
        return None
    if raw.endswith("%"):
        percent = _number(raw[:-1].rstrip())
        if percent is not None:
            return round(percent / 100, 10)
    head, space, unit = raw.partition(" ")
    if space and len(unit) <= 8 and unit.isascii() and unit.replace("/", "").isalpha():
        # `76.6 tokens/s`, `3 reqs`: the regex below reads these the same way, only slower.
        number = _number(head)
        if number is not None:
            return number
    with_unit = _NUMBER_UNIT.fullmatch(raw)
    if with_unit is not None:
        number = _number(with_unit[1])
        if number is not None:
            return number
    return raw


def split_pairs(body: str, sep: str = ", ", assign: str = ": ") -> dict[str, Value]:
    """`a: 1, #b: 2` -> {"a": 1, "b": 2}; parts without `assign` are skipped."""
    fields: dict[str, Value] = {}
    for part in body.split(sep):
        key, found, raw = part.partition(assign)
        if found:
            name = field_name(key)
            if name:
                fields[name] = field_value(raw)
    return fields
