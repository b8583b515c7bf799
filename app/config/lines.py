"""The line of a key path in kvwatch.toml's text, for error messages.

tomllib gives values without positions, so the text is scanned once: every table header
(`[hosts.compare]`, `[[hosts]]`) and every `key =` line is recorded under its path in the tree, a list
of tables (`[[hosts]]`, `[[hosts.vetoes]]`) counted as TOML counts it. A path's line is the line of
its longest recorded prefix: the key itself when the file sets it, else its table's header (a missing
key, or one inside an inline table). A scan, not a parser: a header or `key =` inside a multi-line
string can mislead it, which costs at most a wrong line number in a message.
"""

from __future__ import annotations

import re

from kvwatch.app.config.messages import Loc

HEADER = re.compile(r"^\s*(\[\[?)\s*([^\[\]]+?)\s*\]\]?\s*(#.*)?$")
KEY = re.compile(r"""^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*=""")
PART = re.compile(r"""[A-Za-z0-9_-]+|"[^"]*"|'[^']*'""")


class KeyLines:
    """Path in the tree -> the 1-based line that writes it."""

    def __init__(self, text: str) -> None:
        self.lines: dict[Loc, int] = {}
        self._counts: dict[tuple[str, ...], int] = {}  # a list of tables (by names) -> its last index
        section: Loc = ()
        for number, line in enumerate(text.splitlines(), 1):
            header = HEADER.match(line)
            if header:
                section = self._header(_names(header.group(2)), header.group(1) == "[[")
                self.lines.setdefault(section, number)
                continue
            key = KEY.match(line)
            if key:
                self.lines.setdefault((*section, *_names(key.group(1))), number)

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
