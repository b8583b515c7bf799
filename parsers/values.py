"""Field names and values, one rule for every parser (docs/records.md).

Names: drop a leading `#` and any `(unit)`, lowercase, non-alphanumerics -> `_`
(`gen throughput (token/s)` -> `gen_throughput`). Only a key of a field name's shape names a field
(`field_key`): a short phrase of words, an optional `(unit)`, no stamp, pid, path, bracket or
digits-only word. Anything else (a wrapper glued to a key, `vllm-1 | INFO 07-02 08:34:45 ...`) is an
unknown key: counted in the parser's health, never a field, so it can never become a series.
Values: `True`/`False` -> bool, decimal integers
-> int, finite decimals -> float, `NN.NN%` -> ratio, `12.5 GB` -> 12.5 (unit dropped), `nan`/`nan%`
(SGLang's `fwd occupancy: nan%` before the device timer has a window) -> None, so a NaN is never a
number and never a string in a numeric column; anything else stays the stripped string. The same
text always gives the same value: no state, no guessing.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

from kvwatch.parsers.base import ParseHealth

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


# A phrase of at most 8 words of letters, digits and `_.%/-`, each after an optional `#`, then an optional
# `(unit)`. Every name of the metric catalog has this shape (tests/parsers/test_field_names.py).
_KEY_SHAPE = re.compile(r"#?[A-Za-z][A-Za-z0-9_.%/-]*(?: #?[A-Za-z0-9_.%/-]+){0,7}(?: ?\([^()]{0,32}\))?")
MAX_NAME_CHARS = 64


@lru_cache(maxsize=4096)
def field_key(key: str) -> str:
    """The field name of a logged key, or "" when the key is not of a field name's shape."""
    key = key.strip()
    if len(key) > MAX_NAME_CHARS + 32 or _KEY_SHAPE.fullmatch(key) is None:
        return ""
    name = field_name(key)
    if not name or len(name) > MAX_NAME_CHARS or any(word.isdigit() for word in name.split("_")):
        return ""
    return name


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


def split_pairs(body: str, sep: str = ", ", assign: str = ": ", health: ParseHealth | None = None) -> dict[str, Value]:
    """`a: 1, #b: 2` -> {"a": 1, "b": 2}; parts without `assign` are skipped, parts whose key is not
    a field name are counted in `health.unknown_keys`."""
    fields: dict[str, Value] = {}
    for part in body.split(sep):
        key, found, raw = part.partition(assign)
        if found:
            name = field_key(key)
            if name:
                fields[name] = field_value(raw)
            elif health is not None:
                health.unknown_keys += 1
    return fields
