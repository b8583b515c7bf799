"""The line of a key path in kvwatch.toml's text, for error messages.

tomllib gives values without positions, so the text is scanned once: every table header
(`[hosts.compare]`, `[[hosts]]`) and every `key =` line is recorded under its path in the tree, a list
of tables (`[[hosts]]`, `[[hosts.vetoes]]`) counted as TOML counts it. A path's line is the line of
its longest recorded prefix: the key itself when the file sets it, else its table's header (a missing
key, or one inside an inline table). The scan follows each value to its end (strings, multi-line
strings, arrays and inline tables across lines), so text inside a value is never taken for a key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kvwatch.app.config.messages import Loc

HEADER = re.compile(r"^\s*(\[\[?)\s*([^\[\]]+?)\s*\]\]?\s*(#.*)?$")
KEY = re.compile(r"""^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*=""")
PART = re.compile(r"""[A-Za-z0-9_-]+|"[^"]*"|'[^']*'""")
MULTI = ('"""', "'''")


@dataclass
class ValueState:
    """Where the scan is inside a value that goes on past its line: an open multi-line string (its
    delimiter), and how many arrays or inline tables are open."""

    string: str | None = None
    depth: int = 0

    @property
    def open(self) -> bool:
        return self.string is not None or self.depth > 0

    def feed(self, text: str) -> None:
        """Follow `text` (the rest of a line) through strings, brackets and a comment."""
        i = 0
        while i < len(text):
            if self.string is not None:
                i = self._close_multi(text, i)
                continue
            char = text[i]
            if char == "#":
                return  # a comment: nothing after it is TOML
            if text.startswith(MULTI, i):
                self.string, i = text[i:i + 3], i + 3
            elif char in "\"'":
                i = _string_end(text, i)
            else:
                self.depth += (char in "[{") - (char in "]}")
                i += 1

    def _close_multi(self, text: str, i: int) -> int:
        """The index after the open multi-line string's end on this line, or the line's length."""
        assert self.string is not None
        while i < len(text):
            if self.string == '"""' and text[i] == "\\":
                i += 2  # an escape: `\"""` does not end the string
            elif text.startswith(self.string, i):
                i += 3
                # quotes right after the delimiter belong to the content: four quotes end with one inside
                while i < len(text) and text[i] == self.string[0]:
                    i += 1
                self.string = None
                return i
            else:
                i += 1
        return i


def _string_end(text: str, i: int) -> int:
    """The index after a one-line string starting at `i` (basic strings have escapes, literal ones not)."""
    quote, j = text[i], i + 1
    while j < len(text) and text[j] != quote:
        j += 2 if quote == '"' and text[j] == "\\" else 1
    return j + 1


class KeyLines:
    """Path in the tree -> the 1-based line that writes it."""

    def __init__(self, text: str) -> None:
        self.lines: dict[Loc, int] = {}
        self._counts: dict[tuple[str, ...], int] = {}  # a list of tables (by names) -> its last index
        section: Loc = ()
        value = ValueState()
        for number, line in enumerate(text.splitlines(), 1):
            if value.open:  # a line inside a value: neither a header nor a key of the table
                value.feed(line)
                continue
            header = HEADER.match(line)
            if header:
                section = self._header(_names(header.group(2)), header.group(1) == "[[")
                self.lines.setdefault(section, number)
                continue
            key = KEY.match(line)
            if key:
                self.lines.setdefault((*section, *_names(key.group(1))), number)
                value.feed(line[key.end():])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KeyLines) and other.lines == self.lines

    __hash__ = None  # type: ignore[assignment]  # mutable while built, compared by value

    def _header(self, names: tuple[str, ...], array: bool) -> Loc:
        if array:  # a new item: count it, and start the lists nested in it afresh
            self._counts[names] = self._counts.get(names, -1) + 1
            for nested in [n for n in self._counts if len(n) > len(names) and n[:len(names)] == names]:
                del self._counts[nested]
        path: list[int | str] = []
        for depth in range(1, len(names) + 1):
            path.append(names[depth - 1])
            if names[:depth] in self._counts:
                path.append(self._counts[names[:depth]])
        return tuple(path)

    def __call__(self, loc: Loc) -> int | None:
        for end in range(len(loc), -1, -1):
            if loc[:end] in self.lines:
                return self.lines[loc[:end]]
        return None


def _names(dotted: str) -> tuple[str, ...]:
    return tuple(part.strip("\"'") for part in PART.findall(dotted))
