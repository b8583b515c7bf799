"""Numeric ranges for flags set through kvwatch: argparse takes `--tp-size 1000000000000000000000000000000`,
SGLang then fails somewhere deep (or allocates for it). A request's numbers must be plausible:

- parallel sizes (`tp-size`, `dp-size`, `ep-size`, ...): 1 to 1024;
- fractions (`mem-fraction-static`, `*-fraction`): 0 to 1;
- every other integer: a signed 32-bit value (what CUDA kernels and most of SGLang's sizes are);
- every other float: finite (checked by the schema) and at most 1e12 in size.
Human-readable integers (`16k`, `2Gi`) are expanded before the check.
"""

from __future__ import annotations

import re

INT32 = (-(2**31), 2**31 - 1)
PARALLEL_LIMIT = 1024
FLOAT_LIMIT = 1e12
_PARALLEL = re.compile(r"(tp|dp|pp|ep|cp|dcp|attn-dp|attn-cp|moe-dp|moe-dense-tp|shared-experts-tp|dwdp|max-ep)-size")
_FRACTION = re.compile(r".*-fraction(-static)?")
_SUFFIX = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_HUMAN = re.compile(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?")


def out_of_range(flag: str, value: int | float | str) -> str | None:
    """Why `value` is not a plausible value of `flag`, or None. Strings are checked only when human-readable ints."""
    number = _number(value)
    if number is None:
        return None
    low, high = _range(flag, isinstance(value, float))
    if low <= number <= high:
        return None
    return f"{value!r} is out of range ({_shown(low)} to {_shown(high)})"


def _range(flag: str, is_float: bool) -> tuple[float, float]:
    if _PARALLEL.fullmatch(flag):
        return 1, PARALLEL_LIMIT
    if _FRACTION.fullmatch(flag):
        return 0, 1
    return (-FLOAT_LIMIT, FLOAT_LIMIT) if is_float else INT32


def _number(value: int | float | str) -> float | None:
    if isinstance(value, int | float):
        return value
    match = _HUMAN.fullmatch(value)
    return float(match.group(1)) * _SUFFIX[match.group(2) or ""] if match else None


def _shown(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() and abs(bound) < 1e15 else f"{bound:g}"
