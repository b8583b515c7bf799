"""The server-args dump at startup -> a dict of the effective flags.

SGLang 0.3.6-0.5.13 log `server_args=ServerArgs(model_path='...', mem_fraction_static=0.88, ...)`,
0.5.23 logs a dict repr `server_args={'model_path': '...', ...}`, vLLM logs `args: Namespace(...)` or
`non-default args: {...}`. Keys are the Python attribute names (`mem_fraction_static`). Values are
Python literals where they are literals (numbers, strings, None, lists, dicts), else the repr text
(`torch.bfloat16`). Secret values (`api_key`, `hf_token`, ...) come out as `<redacted>`
(parsers/secrets.py): a record never holds them. A value the dump does not close is cut off, not
fatal: every readable item is kept.
"""

from __future__ import annotations

import ast
import math
from typing import Any

from kvwatch.parsers.secrets import redact_mapping

_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {")", "]", "}"}
_MAX_VALUE = 20000


def split_top_level(text: str) -> list[str]:
    """Split on commas outside quotes and brackets."""
    items: list[str] = []
    depth = 0
    quote = ""
    start = 0
    escaped = False
    for index, char in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth = max(depth - 1, 0)
        elif char == "," and depth == 0:
            items.append(text[start:index])
            start = index + 1
    items.append(text[start:])
    return [item.strip() for item in items if item.strip()]


def jsonable(value: Any) -> Any:
    """Literal values as JSON can hold them (tuples -> lists, odd types -> their repr)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    return repr(value)


def literal(raw: str) -> Any:
    if len(raw) > _MAX_VALUE:
        return raw[:_MAX_VALUE]
    try:
        return jsonable(ast.literal_eval(raw))
    except Exception:  # literal_eval raises many types (ValueError, SyntaxError, RecursionError...)
        return raw


def _key(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    return raw


def parse_args_dump(text: str) -> dict[str, Any] | None:
    """`ServerArgs(a=1, ...)`, `Namespace(a=1, ...)` or `{'a': 1, ...}` -> {"a": 1, ...}."""
    text = text.strip()
    if text.startswith("{"):
        body, assign = text[1:], ":"
        body = body[:-1] if body.endswith("}") else body
    elif "(" in text[:40] and text[: text.index("(")].isidentifier():
        body, assign = text[text.index("(") + 1 :], "="
        body = body[:-1] if body.endswith(")") else body
    else:
        return None
    args: dict[str, Any] = {}
    for item in split_top_level(body):
        key, found, raw = item.partition(assign)
        key = _key(key)
        if found and key.isidentifier():
            args[key] = literal(raw.strip())
    return redact_mapping(args)
