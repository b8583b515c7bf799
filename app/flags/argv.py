"""Flags to argv and a launch command line back to flags.

A host's `launch` (for example `CUDA_VISIBLE_DEVICES=0,1 python -m sglang.launch_server --model-path
/models/K --tp 8`) is split with shlex into leading environment assignments, the program
(`python -m sglang.launch_server`) and its flags, which are parsed with the schema like argparse
would. A restart's flags are the launch flags with the requested ones laid over them, rendered back
as argv: one value per option always in the `--name=value` form, so that no value can become an
option; list values as separate elements after the option (each already refused if it starts with
`-`). The argv is executed without a shell locally and quoted element by element over SSH.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from kvwatch.app.flags.schema import FlagError, FlagValue, Schema, ValidationError, normalize

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Launch:
    """A parsed launch command: environment, program, and its flags (canonical names, typed values)."""

    program: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    flags: dict[str, FlagValue] = field(default_factory=dict)

    def argv(self, schema: Schema, flags: dict[str, FlagValue]) -> list[str]:
        return [*self.program, *render(schema, flags)]


def merge(base: dict[str, FlagValue], changes: dict[str, FlagValue]) -> dict[str, FlagValue]:
    """`base` with `changes` laid over it; a None change removes the flag."""
    merged = dict(base)
    for name, value in changes.items():
        if value is None:
            merged.pop(name, None)
        else:
            merged[name] = value
    return merged


def render(schema: Schema, flags: dict[str, FlagValue]) -> list[str]:
    """argv elements for canonical, validated flags, in their order."""
    argv: list[str] = []
    for name, value in flags.items():
        option = schema.option(name)
        if value is None:
            continue
        if option.action == "boolean_optional":
            argv.append(f"--{name}" if value else f"--no-{name}")
        elif option.action == "count":
            argv.extend([f"--{name}"] * int(value) if isinstance(value, int) else [])
        elif option.is_switch:
            argv.extend([f"--{name}"] if value else [])
        elif option.action == "append":
            argv.extend(f"--{name}={_text(item)}" for item in _items(value))
        elif option.is_list:
            argv.extend([f"--{name}", *(_text(item) for item in _items(value))])
        else:
            argv.append(f"--{name}={_text(value)}")
    return argv


def _items(value: FlagValue) -> list[int | float | str]:
    return value if isinstance(value, list) else [value] if isinstance(value, int | float | str) else []


def _text(value: FlagValue) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def parse_launch(schema: Schema, command: str) -> tuple[Launch, list[ValidationError]]:
    """Split a launch command line and parse its flags with the schema (not strict: it is the owner's)."""
    try:
        tokens = shlex.split(command)
    except ValueError as exc:
        return Launch(program=()), [ValidationError("launch", f"cannot split the command line: {exc}")]
    env: dict[str, str] = {}
    while tokens and _ASSIGNMENT.fullmatch(tokens[0]):
        key, _, value = tokens.pop(0).partition("=")
        env[key] = value
    split = next((i for i, token in enumerate(tokens) if token.startswith("--")), len(tokens))
    program, rest = tuple(tokens[:split]), tokens[split:]
    if not program:
        return Launch(program=()), [ValidationError("launch", "no program before the first --flag")]
    raw, errors = _raw_flags(schema, rest)
    flags, more = normalize(schema, raw, strict=False)
    return Launch(program=program, env=env, flags=flags), errors + more


def _raw_flags(schema: Schema, tokens: list[str]) -> tuple[dict[str, object], list[ValidationError]]:
    raw: dict[str, object] = {}
    errors: list[ValidationError] = []
    while tokens:
        token = tokens.pop(0)
        name, eq, inline = token.removeprefix("--").partition("=")
        if not token.startswith("--"):
            errors.append(ValidationError("launch", f"unexpected argument {token!r}"))
            continue
        try:
            option = schema.resolve(name)[0]
        except FlagError as exc:
            errors.append(ValidationError(name, str(exc)))
            continue
        if option.is_switch and option.action != "count":
            raw[name] = True
        elif option.action == "count":
            raw[name] = int(raw.get(name, 0) or 0) + 1  # type: ignore[call-overload]
        elif option.is_list:
            values = [inline] if eq else _take_values(tokens, option.nargs)
            previous = raw.get(name, [])
            raw[name] = [*previous, *values] if isinstance(previous, list) and option.action == "append" else values
        else:
            raw[name] = inline if eq else (tokens.pop(0) if tokens else None)
            if raw[name] is None:
                errors.append(ValidationError(name, "expects a value"))
    return raw, errors


def _take_values(tokens: list[str], nargs: int | str | None) -> list[str]:
    if isinstance(nargs, int):
        taken = tokens[:nargs]
        del tokens[:nargs]
        return taken
    count = next((i for i, token in enumerate(tokens) if token.startswith("--")), len(tokens))
    if nargs is None or nargs == "?":
        count = min(count, 1)
    taken = tokens[:count]
    del tokens[:count]
    return taken
