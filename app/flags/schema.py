"""Load a flag schema and check requested flags against it, the way SGLang's argparse would parse them.

Flags are a mapping from a flag name without the leading `--` to a value: `{"mem-fraction-static": 0.88,
"enable-hierarchical-cache": True, "tp": 8}`. Names resolve like argparse: an exact option string
(`model` is an alias of `model-path`) or an unambiguous prefix (`tp` -> `tp-size`); the result is
keyed by the option's first option string (`tp-size`). Values:

- switches (store_true, store_false, --x/--no-x): a boolean; `no-x: true` becomes `x: false`;
- one value: int, float or string, converted by the option's type and checked against its choices;
- several values (nargs `+`, `*`, N; append): a list of those;
- `None`: drop the flag (back to SGLang's default).

kvwatch's own rules on top (a value must never be able to act as an option or break a command line):
no NUL, newline or other control character; no string value starting with `-`; at most 1024
characters; numbers finite; secret-bearing flags (`api-key`...) refused, since an argv is visible in
`ps`. Requests from the API are `strict`: string values also have to match a plain character set
(letters, digits, `._:/=,+@%~-`), which rules out every shell metacharacter even though the
command line is quoted anyway, and numbers have to be in a plausible range (app/flags/bounds.py).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from kvwatch.app.flags.bounds import out_of_range

FlagValue = bool | int | float | str | list[int | float | str] | None

FLAGS_DIR = Path(__file__).resolve().parent
MAX_VALUE_LEN = 1024
# Flags that carry secrets (api-key, admin-api-key, ssl-keyfile-password in 0.5.23). Not "token" alone:
# SGLang has dozens of *-tokens sizes.
_SECRET = re.compile(r"(^|-)(api-key|password|passwd|secret|credentials?)$|(^|-)(hf|auth|access|bearer)-token$")
_STRICT = re.compile(r"[A-Za-z0-9._:/=,+@%~-]+")
_HUMAN_INT = re.compile(r"\d+(\.\d+)?(Ki|Mi|Gi|Ti|k|M|G|T)?")
_INT = re.compile(r"[+-]?\d+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]")
NUMERIC_TYPES = frozenset({"int", "float", "human_readable_int"})


@dataclass(frozen=True, slots=True)
class ValidationError:
    """One refused flag, with a reason a person can act on."""

    flag: str
    message: str

    def __str__(self) -> str:
        return f"--{self.flag}: {self.message}"


class FlagError(ValueError):
    """Raised inside the checks; collected into ValidationErrors."""


@dataclass(frozen=True, slots=True)
class Option:
    """One argparse option of SGLang's ServerArgs, as extracted."""

    option_strings: tuple[str, ...]
    dest: str
    default: Any
    choices: tuple[Any, ...] | None
    type: str | None
    nargs: int | str | None
    action: str
    help: str

    @property
    def name(self) -> str:
        return self.option_strings[0].removeprefix("--")

    @property
    def is_switch(self) -> bool:
        return self.nargs == 0 or self.action in ("store_true", "store_false", "store_const", "count")

    @property
    def is_list(self) -> bool:
        return self.action == "append" or self.nargs in ("+", "*") or isinstance(self.nargs, int)

    def public(self) -> dict[str, Any]:
        """The JSON the page's editor needs."""
        return {"name": self.name, "aliases": [s.removeprefix("--") for s in self.option_strings[1:]],
                "default": self.default, "choices": self.choices, "type": self.type, "nargs": self.nargs,
                "action": self.action, "help": self.help}


class Schema:
    """Every option of one SGLang version, indexed for argparse-style resolution."""

    def __init__(self, version: str, options: list[Option]) -> None:
        self.version = version
        self.options = tuple(options)
        self._by_string = {s: o for o in options for s in o.option_strings if s.startswith("--")}
        self._by_name = {o.name: o for o in options}

    @classmethod
    def from_document(cls, document: dict[str, Any]) -> Schema:
        options = [Option(option_strings=tuple(raw["option_strings"]), dest=raw["dest"], default=raw["default"],
                          choices=None if raw["choices"] is None else tuple(raw["choices"]),
                          type=raw["type"], nargs=raw["nargs"], action=raw["action"], help=raw["help"])
                   for raw in document["options"]]
        return cls(str(document["sglang"]), options)

    def option(self, name: str) -> Option:
        """The option under its canonical name (as returned by `resolve`)."""
        return self._by_name[name]

    def validate(self, flags: dict[str, object], strict: bool = True) -> list[ValidationError]:
        return validate(self, flags, strict)

    def resolve(self, name: str) -> tuple[Option, bool]:
        """The option `--name` means to argparse, and whether `name` was its negative `--no-x` form."""
        string = "--" + name
        option = self._by_string.get(string)
        if option is None:
            matches = {o.name: o for s, o in self._by_string.items() if s.startswith(string)}
            if not matches:
                raise FlagError(f"unknown flag for sglang {self.version}")
            if len(matches) > 1:
                names = sorted(matches)
                more = f" and {len(names) - 4} more" if len(names) > 4 else ""
                raise FlagError(f"ambiguous abbreviation: could be --{', --'.join(names[:4])}{more}")
            option = next(iter(matches.values()))
            string = next(s for s in option.option_strings if s.startswith(string))
        negative = string.startswith("--no-") and string != option.option_strings[0]
        return option, option.action == "boolean_optional" and negative


@cache
def load_bundled(version: str) -> Schema:
    """A schema committed in app/flags (`sglang-<version>.json`)."""
    path = FLAGS_DIR / f"sglang-{version}.json"
    try:
        return Schema.from_document(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError as exc:
        raise FlagError(f"no bundled flag schema for sglang {version} ({path.name})") from exc


def bundled_versions() -> list[str]:
    return sorted(p.stem.removeprefix("sglang-") for p in FLAGS_DIR.glob("sglang-*.json"))


def check_text(text: str, strict: bool) -> str:
    """A string value that can be neither an option nor anything but one argv element."""
    if _CONTROL.search(text):
        raise FlagError("control characters (newline, NUL, ...) are not allowed in values")
    if text.startswith("-"):
        raise FlagError("a value may not start with '-'")
    if len(text) > MAX_VALUE_LEN:
        raise FlagError(f"value longer than {MAX_VALUE_LEN} characters")
    if strict and not _STRICT.fullmatch(text):
        raise FlagError("only letters, digits and ._:/=,+@%~- are allowed in values set through kvwatch")
    return text


def convert(option: Option, value: object, strict: bool) -> int | float | str:
    """One scalar, converted by the option's type like argparse would, then checked against choices."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise FlagError(f"expected {option.type or 'str'}, got {type(value).__name__}")
    converted = _by_type(option.type, value, strict)
    if strict and option.type in NUMERIC_TYPES:
        problem = out_of_range(option.name, converted)
        if problem is not None:
            raise FlagError(problem)
    if option.choices is not None and str(converted) not in {str(c) for c in option.choices}:
        raise FlagError(f"{converted!r} is not one of {', '.join(map(str, option.choices))}")
    return converted


def _by_type(type_name: str | None, value: int | float | str, strict: bool) -> int | float | str:
    if type_name == "int":
        if isinstance(value, str) and _INT.fullmatch(value):
            return int(value)
        if isinstance(value, int):
            return value
        raise FlagError(f"expected an integer, got {value!r}")
    if type_name == "float":
        number = _float(value)
        if not math.isfinite(number):
            raise FlagError(f"expected a finite number, got {value!r}")
        return number if isinstance(value, str) else value
    if type_name == "human_readable_int":
        if isinstance(value, int):
            return value
        if isinstance(value, str) and _HUMAN_INT.fullmatch(value):
            return value
        raise FlagError(f"expected an integer such as 16384 or 16k, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise FlagError(f"expected a finite number, got {value!r}")
    return value if not isinstance(value, str) else check_text(value, strict)


def _float(value: int | float | str) -> float:
    try:
        return float(value)
    except ValueError as exc:
        raise FlagError(f"expected a number, got {value!r}") from exc


def normalize_one(schema: Schema, name: str, value: object, strict: bool) -> tuple[str, FlagValue]:
    """(canonical name, typed value) for one requested flag; raises FlagError."""
    option, negative = schema.resolve(name)
    if _SECRET.search(option.name):
        raise FlagError("secrets are never put on a command line; give the server this one through its environment")
    if value is None:
        return option.name, None
    if option.is_switch and option.action != "count":
        if not isinstance(value, bool):
            raise FlagError(f"a switch takes true or false, got {value!r}")
        return option.name, (not value) if negative else value
    if option.action == "count":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise FlagError(f"a counted flag takes a non-negative integer, got {value!r}")
        return option.name, value
    if option.is_list:
        items = value if isinstance(value, list) else [value]
        if option.nargs == "+" and not items:
            raise FlagError("needs at least one value")
        if isinstance(option.nargs, int) and len(items) != option.nargs:
            raise FlagError(f"needs exactly {option.nargs} values")
        converted = [convert(option, item, strict) for item in items]
        if any(isinstance(item, int | float) and item < 0 for item in converted):
            raise FlagError("negative numbers cannot be list items (argparse would read them as options)")
        return option.name, converted
    return option.name, convert(option, value, strict)


def normalize(schema: Schema, flags: dict[str, object], strict: bool = True) -> tuple[dict[str, FlagValue],
                                                                                     list[ValidationError]]:
    """Canonical, typed flags and every error found (all of them, not just the first)."""
    result: dict[str, FlagValue] = {}
    errors: list[ValidationError] = []
    for name, value in flags.items():
        shown = name.removeprefix("--") if isinstance(name, str) else repr(name)
        try:
            if not isinstance(name, str) or not name.removeprefix("--") or _CONTROL.search(name):
                raise FlagError("not a flag name")
            canonical, typed = normalize_one(schema, name.removeprefix("--"), value, strict)
        except FlagError as exc:
            errors.append(ValidationError(shown, str(exc)))
            continue
        if canonical in result:
            errors.append(ValidationError(shown, f"given twice (also as --{canonical})"))
        result[canonical] = typed
    return result, errors


def validate(schema: Schema, flags: dict[str, object], strict: bool = True) -> list[ValidationError]:
    """Every reason `flags` would be refused (empty when they are fine)."""
    return normalize(schema, flags, strict)[1]
