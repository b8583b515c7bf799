"""Where a block's values are, and which lines fully match a shape: numpy over the block's bytes.

Why not RE2 and `split_pattern`, as before: on the bench's 1M lines, RE2's DFA
(`match_substring_regex`) read every byte of every line once per shape, 0.4 s for the decode and
prefill shapes, and `split_pattern(lines, ": ")` copied the whole block, 0.2 s. Neither is needed.
In a shape's line everything but the stamp's digits, the rank tags and the values is fixed text, and
each run of it ends at a `: ` (see `Shape`). So a line fully matches a shape exactly when it has one
`: ` per value, the shape's fixed text ends at each of them, and the stamp, the tags and each value
are of their kind, the rest after the last value being `[, .\\r]*`. Those checks run column-wise over
the candidate rows, comparing 8 bytes at a time (unaligned 64-bit words over the block). They give
RE2's answer for the shape's regex: tests/parsers/test_columnar_split.py compares the two.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kvwatch.parsers import columnar_bytes as cb
from kvwatch.parsers.sglang import TOKEN_PARTS, USAGE_PARTS
from kvwatch.parsers.shapes import Shape

_WORD = 8
# Zero bytes after the block: a word can be read up to 40 bytes past a line's end (a float value of 37
# bytes read 8 at a time), so no read position needs clipping.
_PAD = 48
_COLON, _SPACE, _DIGIT = ord(":"), ord(" "), ord("0")
# A byte-wise digit test on whole words: a byte is a digit when its high nibble is 3 and adding 6
# keeps it there. A carry out of a byte can only happen from a byte of 0xFA or more, which fails.
_HIGH, _THREES, _SIXES = (np.uint64(int.from_bytes(bytes([b]) * 8, "little")) for b in (0xF0, 0x30, 0x06))
_LOW = np.array([(1 << (8 * n)) - 1 for n in range(_WORD + 1)], np.uint64)  # the first n bytes of a word
_TAGS = re.compile(rb"(?: [A-Z][A-Z_]*[0-9]{1,6})*")  # the rank tags a shape's regex accepts
_TRAILING = np.zeros(256, bool)  # by byte: what a shape's `[, .\r]*$` lets follow the last value
_TRAILING[list(b", .\r")] = True
_MOST = {"int": 18, "float": 37, "bool": 5}  # `[0-9]{1,18}`, `[0-9]{1,18}\.[0-9]{1,18}`, `False`


Spans = list[tuple[np.ndarray, np.ndarray]]  # (starts, ends) of each value, in bytes


def _word(text: bytes) -> np.uint64:
    return np.uint64(int.from_bytes(text, "little"))


class Scratch:
    """Block-sized buffers kept from one block to the next of a stream. Fresh ones cost a page fault
    per 4 KiB each time (glibc maps allocations this large anew): about 0.1 s of system time over the
    bench's 1M lines."""

    def __init__(self) -> None:
        self.buffers: dict[str, np.ndarray] = {}

    def get(self, name: str, size: int, kind: type) -> np.ndarray:
        held = self.buffers.get(name)
        if held is None or len(held) < size:
            held = self.buffers[name] = np.empty(max(size, 1) + (size >> 3), kind)
        return held[:size]


class Split:
    """One block of lines (an Arrow string array), its `: ` positions and its line bounds.

    `scratch`: buffers to reuse; the Split's `data` is then valid until the next Split on it.
    """

    def __init__(self, lines: pa.Array, scratch: Scratch | None = None) -> None:
        scratch = scratch or Scratch()
        bounds = cb.offsets(lines).astype(np.int64)
        buffer = lines.buffers()[2]
        start, end = int(bounds[0]), int(bounds[-1])
        self.data = scratch.get("data", end - start + _PAD, np.uint8)
        self.data[end - start :] = 0
        if buffer is not None:
            self.data[: end - start] = np.frombuffer(buffer, np.uint8)[start:end]
        self.bounds = bounds - start
        self.words = np.ndarray((len(self.data) - _WORD + 1,), "<u8", buffer=self.data, strides=(1,))
        body = self.data[: end - start]
        size = max(len(body) - 1, 0)
        pairs, spaces = scratch.get("pairs", size, np.bool_), scratch.get("spaces", size, np.bool_)
        np.equal(body[:-1], _COLON, out=pairs)
        np.logical_and(pairs, np.equal(body[1:], _SPACE, out=spaces), out=pairs)
        if len(pairs):  # a `:` ending one line and a space opening the next are no `: `
            pairs[np.clip(self.bounds[1:-1] - 1, 0, len(pairs) - 1)] = False
        self.seps = np.flatnonzero(pairs)
        self.first = np.searchsorted(self.seps, self.bounds)  # index of each line's first `: `
        self.count = np.diff(self.first)  # `: `s in each line

    def matching(self, shape: Shape, rows: np.ndarray) -> tuple[np.ndarray, Spans]:
        """Those of `rows` (line indices, ascending) whose line fully matches `shape`, and the byte
        ranges of their values."""
        count = len(shape.names)
        rows = rows[self.count[rows] == count]
        head_at = self.seps[self.first[rows]] - shape.head
        fits = head_at >= self.bounds[rows] + 1 + shape.stamp_len
        rows = rows[fits & self._text(np.maximum(head_at, 0), shape.head_text)]  # also tells decode from prefill
        fits = self._stamp(self.bounds[rows], shape.stamp_len)
        values = [self._value(shape, rows, index) for index in range(count)]
        for index, (kind, (starts, ends)) in enumerate(zip(shape.types, values, strict=True)):
            fits &= self._value_fits(kind, starts, ends)
            if index < count - 1:
                fits &= self._text(ends, shape.gap_texts[index])
        fits &= self._tags_fit(rows, shape)
        return rows[fits], [(starts[fits], ends[fits]) for starts, ends in values]

    def table(self, shape: Shape, rows: np.ndarray, values: Spans, line_numbers: np.ndarray) -> pa.Table:
        """The records of `rows`, lines that all fully match `shape`, with `matching`'s value ranges."""
        line_start = self.bounds[rows] + 1  # after `[`
        bounds, stamps = cb.cut(self.data, line_start, line_start + shape.stamp_len)
        stamps.reshape(len(rows), shape.stamp_len)[:, 10] = ord("T")
        tags_end = self.seps[self.first[rows]] - shape.head
        columns: dict[str, pa.Array] = {
            "kind": pa.repeat(shape.kind, len(rows)),
            "line": pa.Array.from_buffers(pa.int64(), len(rows), [None, pa.py_buffer(line_numbers)]),
            "ts": cb.strings(bounds, stamps),
            "tags": cb.tags(cb.strings(*cb.cut(self.data, line_start + shape.stamp_len, tags_end))),
        }
        for name, kind, (starts, ends) in zip(shape.names, shape.types, values, strict=True):
            if kind == "bool":
                columns[name] = cb.booleans(self.data, starts)
            else:
                columns[name] = cb.numbers(self.data, starts, ends, kind)
        _pool_totals(columns)
        return pa.Table.from_pydict(columns)

    def _value(self, shape: Shape, rows: np.ndarray, index: int) -> tuple[np.ndarray, np.ndarray]:
        """Byte ranges of value `index` of `rows`: from its `: ` to the next one's fixed text, or for
        the last value to the line's end less the separators that may follow it."""
        at = self.first[rows] + index
        starts = self.seps[at] + 2
        if index < len(shape.names) - 1:
            return starts, self.seps[at + 1] - shape.gaps[index]
        return starts, self._trim(starts, self.bounds[rows + 1])

    def _trim(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Drop the separators that may follow a line's last value (a value never ends in one)."""
        ends = ends.copy()
        while True:
            more = (ends > starts) & _TRAILING[self.data[np.maximum(ends - 1, 0)]]
            if not more.any():
                return ends
            ends -= more

    def _text(self, at: np.ndarray, text: bytes) -> np.ndarray:
        """Whether `text` is written at each position of `at` (positions inside the block)."""
        fits = np.ones(len(at), bool)
        for cut in range(0, len(text), _WORD):
            piece = text[cut : cut + _WORD]
            fits &= (self.words[at + cut] & _LOW[len(piece)]) == _word(piece)
        return fits

    def _digits(self, starts: np.ndarray, lengths: np.ndarray, most: int) -> np.ndarray:
        """Whether each range of `lengths` bytes from `starts` is 1 to `most` ASCII digits."""
        fits = (lengths >= 1) & (lengths <= most)
        for cut in range(0, most, _WORD):
            size = np.clip(lengths - cut, 0, _WORD)
            if not size.any():
                break
            keep = _LOW[size]
            word = (self.words[starts + cut] & keep) | (_THREES & ~keep)  # the bytes past the range read as a digit
            fits &= ((word & _HIGH) == _THREES) & (((word + _SIXES) & _HIGH) == _THREES)
        return fits

    def _value_fits(self, kind: str, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        lengths = ends - starts
        if kind == "int":
            return self._digits(starts, lengths, _MOST["int"])
        if kind == "bool":
            word = self.words[starts]
            true = (lengths == 4) & ((word & _LOW[4]) == _word(b"True"))
            either: np.ndarray = true | ((lengths == 5) & ((word & _LOW[5]) == _word(b"False")))
            return either
        fits: np.ndarray = (lengths >= 3) & (lengths <= _MOST["float"])
        dots = np.full(len(starts), -1, np.int64)
        if fits.any():
            found = pc.find_substring(cb.spans(self.data, starts[fits], ends[fits], pa.binary()), ".")
            dots[fits] = cb.evens(found.fill_null(-1)).to_numpy()
        fits &= dots >= 1
        fits &= self._digits(starts, dots, 18) & self._digits(starts + dots + 1, lengths - dots - 1, 18)
        return fits

    def _stamp(self, starts: np.ndarray, stamp_len: int) -> np.ndarray:
        """Whether `[` and a stamp of the shape's width (`0000-00-00 00:00:00[.0...]`) are at `starts`."""
        template = ("[0000-00-00 00:00:00" + ("." + "0" * (stamp_len - 20) if stamp_len > 19 else "")).encode()
        fits = np.ones(len(starts), bool)
        for cut in range(0, len(template), _WORD):
            piece = template[cut : cut + _WORD]
            digits = _word(bytes(0xFF if b == _DIGIT else 0 for b in piece))
            fixed = _LOW[len(piece)] & ~digits
            word = self.words[starts + cut]
            fits &= (word & fixed) == (_word(piece) & fixed)
            word = (word & digits) | (_THREES & ~digits)
            fits &= ((word & _HIGH) == _THREES) & (((word + _SIXES) & _HIGH) == _THREES)
        return fits

    def _tags_fit(self, rows: np.ndarray, shape: Shape) -> np.ndarray:
        """Whether the text between each row's stamp and its `] ` is rank tags (` TP0`, ` DP1 TP1`)."""
        starts = self.bounds[rows] + 1 + shape.stamp_len
        ends = self.seps[self.first[rows]] - shape.head
        fits: np.ndarray = ends == starts
        tagged = np.flatnonzero(~fits)
        if len(tagged):
            texts = cb.strings(*cb.cut(self.data, starts[tagged], ends[tagged]), pa.binary())
            uniques = pc.unique(texts)
            good = np.array([_TAGS.fullmatch(text) is not None for text in uniques.to_pylist()], bool)
            fits[tagged] = good[pc.index_in(texts, uniques).to_numpy()]
        return fits


def _pool_totals(columns: dict[str, pa.Array]) -> None:
    """parsers.sglang's `token_usage` and `token` of a hybrid model's lines, as columns."""
    for total, parts in (("token_usage", USAGE_PARTS), ("token", TOKEN_PARTS)):
        present = [columns[name] for name in parts if name in columns and columns[name].type != pa.bool_()]
        if total in columns or not present or (total == "token" and "full_token" not in columns):
            continue
        if len({array.type for array in present}) > 1:  # a value logged as 1 on one line, 0.5 on another
            present = [array.cast(pa.float64()) for array in present]
        columns[total] = pc.max_element_wise(*present) if len(present) > 1 else present[0]
