"""A fast path for the lines that make up almost all of a server log.

A log repeats a few line shapes: the same Decode keys in the same order, only the numbers change.
From a line the general parser has read, `BatchShapes.learn` builds one regex for its whole shape
(`[date time tags] Decode batch, #running-req: (\\d+), ...`) and the converter of each value. Later
lines that fully match a known shape are read with one regex call and C-level conversions.

The fast path never changes a result: a shape is learnt only from lines whose every value is a plain
int, float or bool, and its regex accepts only lines the general parser reads the same way (tests
compare both on random lines). Anything else falls through to the general parser.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from operator import call
from typing import Any

from kvwatch.parsers.base import Record
from kvwatch.parsers.header import parse_tags
from kvwatch.parsers.values import field_key

# One pattern text for Python's re and for RE2 (tests/parsers/test_columnar_split.py holds the columnar
# path's byte checks to RE2's answer): named groups, ASCII classes only.
HEADER_PATTERN = (
    r"\[(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2}) (?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?)"
    r"(?P<tags>(?: [A-Z][A-Z_]*[0-9]{1,6})*)\] "
)
_HEADER = re.compile(HEADER_PATTERN)
_INT = "[0-9]{1,18}"
_FLOAT = r"[0-9]{1,18}\.[0-9]{1,18}"
_SPECIAL = set("\\.^$*+?{}[]()|")
_MARKERS = {"decode": "Decode batch", "prefill": "Prefill batch"}
_SEPARATORS = (", ", ". ", ",", ".")
MAX_SHAPES = 16
MAX_SHAPE_FIELDS = 64  # SGLang's widest batch line has about 25; a 100,000-field line took 89 s to learn


class Shape:
    """One line shape: `pattern` (named groups hdr, v0..vN), field names, value types.

    `hdr` is `date time[.ms][ tags]`; the stamp is its first `stamp_len` characters (a shape has one
    millisecond width), the rank tags the rest. One group instead of three: captures cost per group.
    For column-wise reading (parsers.columnar_split), everything else in a matching line is fixed text
    that ends at a `: `: `head_text` (from the rank tags' `]` to the first `: `) and, after value i but
    the last, `gap_texts[i]` (`, ` and the next key). `head` and `gaps` are their lengths, in bytes
    since the columnar path counts positions in bytes.
    """

    __slots__ = (
        "converters", "gap_texts", "gaps", "head", "head_text", "kind", "names", "pattern", "regex", "stamp_len",
        "types",
    )

    def __init__(
        self, kind: str, pattern: str, names: tuple[str, ...], types: tuple[str, ...], stamp_len: int,
        keys: tuple[str, ...] = (), lead: str = "",
    ):
        self.kind = kind
        self.stamp_len = stamp_len
        self.head_text = f"] {lead}{keys[0]}".encode() if keys else b""
        self.head = len(self.head_text)
        self.gap_texts = tuple(f", {key}".encode() for key in keys[1:])
        self.gaps = tuple(map(len, self.gap_texts))
        self.pattern = pattern
        self.regex = re.compile(pattern)
        self.names = names
        self.types = types
        self.converters = tuple(_CONVERTERS[kind] for kind in types)


_CONVERTERS: dict[str, Callable[[str], Any]] = {"int": int, "float": float, "bool": "True".__eq__}


def escape(text: str) -> str:
    """Escape regex syntax the way both Python's re and RE2 read it."""
    return "".join("\\" + char if char in _SPECIAL else char for char in text)


def _value_type(raw: str) -> tuple[str, str] | None:
    if re.fullmatch(_INT, raw):
        return _INT, "int"
    if re.fullmatch(_FLOAT, raw):
        return _FLOAT, "float"
    if raw == "True" or raw == "False":
        return "True|False", "bool"
    return None


def _shape_of(kind: str, text: str) -> Shape | None:
    header = _HEADER.match(text)
    marker = _MARKERS[kind]
    if header is None or not text.startswith(marker, header.end()):
        return None
    rest = text[header.end() + len(marker) :]
    separator = next((sep for sep in _SEPARATORS if rest.startswith(sep)), None)
    if separator is None:
        return None
    body = rest[len(separator) :]
    if body.count(": ") > MAX_SHAPE_FIELDS:  # no engine logs this many: not worth a regex of that size
        return None
    core = body.rstrip(", .\r")
    millis = len(header["time"]) - 9 if len(header["time"]) > 8 else 0
    fraction = rf"\.[0-9]{{{millis}}}" if millis else ""
    stamp = rf"[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}} [0-9]{{2}}:[0-9]{{2}}:[0-9]{{2}}{fraction}"
    pattern = ["^", rf"\[(?P<hdr>{stamp}(?: [A-Z][A-Z_]*[0-9]{{1,6}})*)\] ", escape(marker + separator)]
    names: list[str] = []
    types: list[str] = []
    keys: list[str] = []
    for index, part in enumerate(core.split(", ")):
        key, found, raw = part.partition(": ")
        name = field_key(key) if found else ""
        value = _value_type(raw)
        if not name or value is None or name in names or key != key.lstrip(".,: "):
            return None
        pattern.append(f"{', ' if index else ''}{escape(key + ': ')}(?P<v{index}>{value[0]})")
        names.append(name)
        types.append(value[1])
        keys.append(key)
    pattern.append(r"[, .\r]*$")
    stamp_len = 19 + (millis + 1 if millis else 0)
    return Shape(kind, "".join(pattern), tuple(names), tuple(types), stamp_len, tuple(keys), marker + separator)


class BatchShapes:
    """The shapes seen in one stream, most recent first."""

    def __init__(self) -> None:
        self.shapes: dict[str, list[Shape]] = {"decode": [], "prefill": []}

    def parse(self, kind: str, line_no: int, text: str) -> Record | None:
        for shape in self.shapes[kind]:
            match = shape.regex.fullmatch(text)
            if match is not None:
                groups = match.groups()
                header, cut = groups[0], shape.stamp_len
                tags = header[cut:]
                record: Record = {
                    "kind": kind,
                    "line": line_no,
                    "ts": f"{header[:10]}T{header[11:cut]}",
                    "tags": parse_tags(tags) if tags else {},
                }
                record.update(zip(shape.names, map(call, shape.converters, groups[1:]), strict=True))
                return record
        return None

    def learn(self, kind: str, text: str) -> Shape | None:
        shape = _shape_of(kind, text)
        if shape is not None:
            shapes = self.shapes[kind]
            shapes.insert(0, shape)
            del shapes[MAX_SHAPES:]
        return shape
