"""Columnar fast path for SGLang logs read whole (`kvwatch parse` to CSV or Parquet).

A block of lines (an Arrow string array) is read in three ways at once: the batch lines that fully
match a shape the stream's SglangParser has learnt (parsers.shapes) become columns; access lines are
counted; every other line goes through the parser itself, in order. The records are the ones the
parser would give for the same lines (tests compare them), and the parser's health counts them. One
exception keeps this exact: while the parser holds a traceback open, the rest of the block goes
through the parser line by line.

Why not RE2 captures: with more than four groups RE2 cannot use its one-pass engine and falls back
to a backtracker, about 2.4 times the cost of a plain match. So each shape's regex only says which
lines match (RE2's DFA), and the values are cut out of the lines by position: a matching line has
exactly one `: ` before each value and fixed text between values (see `Shape`), so splitting the
block at `: ` gives every value's start, and its end is the next piece's start less a known length.
"""

from __future__ import annotations

from concurrent.futures import Executor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kvwatch.parsers.base import Record
from kvwatch.parsers.header import parse_tags
from kvwatch.parsers.pools import TOKEN_PARTS, USAGE_PARTS
from kvwatch.parsers.sglang import SglangParser
from kvwatch.parsers.shapes import Shape

_MARKERS = (("decode", "Decode batch"), ("prefill", "Prefill batch"))
_ARROW_TYPES = {"int": pa.int64(), "float": pa.float64()}
_NEW_SHAPES_PER_BLOCK = 4
_TRAILING = np.frombuffer(b", .\r", np.uint8)  # what a shape's `[, .\r]*$` lets follow the last value
Piece = tuple[np.ndarray, pa.Table]  # (row positions in the block, their records)


def _tags(tag_texts: pa.Array) -> pa.Array:
    uniques = pc.unique(tag_texts)
    dicts = [parse_tags(text) if text else {} for text in uniques.to_pylist()]
    if not any(dicts):
        return pa.nulls(len(tag_texts))  # untagged log: an empty struct cannot go to Parquet
    return pa.array(dicts).take(pc.index_in(tag_texts, uniques))


def _cut(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The byte ranges [starts, ends) of `data` copied one after the other: (offsets, bytes)."""
    lengths = ends - starts
    offsets = np.zeros(len(starts) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    width = int(lengths[0]) if len(lengths) else 0
    if width > 0 and offsets[-1] == width * len(starts) and (lengths == width).all():
        # One width (timestamps; rank tags, mostly): rows of a sliding window, no index per byte.
        return offsets, np.lib.stride_tricks.sliding_window_view(data, width)[starts].reshape(-1)
    index = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1])
    return offsets, data[index]


def _numbers(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, kind: str) -> pa.Array:
    """The numbers written at the byte ranges [starts, ends) of `data`, parsed by Arrow's cast.

    No copy of the text: a string array of 2n items over `data` whose odd items, the text between
    two values, are null and so never parsed.
    """
    count = len(starts)
    if count == 0:
        return pa.array([], _ARROW_TYPES[kind])
    offsets = np.empty(2 * count + 1, np.int32)
    offsets[0:-1:2], offsets[1::2], offsets[-1] = starts, ends, ends[-1]
    valid = np.full((2 * count + 7) // 8, 0x55, np.uint8)  # bits 0, 2, 4, ...: the values
    buffers = [pa.py_buffer(valid), pa.py_buffer(offsets), pa.py_buffer(data)]
    text = pa.Array.from_buffers(pa.string(), 2 * count, buffers)
    parsed = text.cast(_ARROW_TYPES[kind])
    width = parsed.type.byte_width
    values = np.frombuffer(parsed.buffers()[1], np.uint8).reshape(-1, width)[0 : 2 * count : 2]
    return pa.Array.from_buffers(parsed.type, count, [None, pa.py_buffer(np.ascontiguousarray(values))])


def _booleans(data: np.ndarray, starts: np.ndarray) -> pa.Array:
    """`True`/`False` at `starts` (a matching line has one of the two there)."""
    bits = np.packbits(data[starts] == ord("T"), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(starts), [None, pa.py_buffer(bits)])


def _strings(offsets: np.ndarray, data: np.ndarray) -> pa.Array:
    buffers = [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)]
    return pa.Array.from_buffers(pa.string(), len(offsets) - 1, buffers)


def _offsets(array: pa.Array) -> np.ndarray:
    """The offsets of a string or list array (StringArray has no `.offsets` of its own)."""
    buffer = array.buffers()[1]
    if buffer is None:
        return np.zeros(len(array) + 1, np.int32)
    return np.frombuffer(buffer, np.int32)[array.offset : array.offset + len(array) + 1]


class _Split:
    """A block split at every `: `: where each line's pieces start, as byte offsets of the pieces' text."""

    def __init__(self, lines: pa.Array) -> None:
        pieces = pc.split_pattern(lines, ": ")
        self.first = _offsets(pieces)  # piece index of each line's first piece
        text = pieces.values
        self.starts = _offsets(text).astype(np.int64)
        data = text.buffers()[2]
        self.data = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)

    def table(self, shape: Shape, rows: np.ndarray, line_numbers: np.ndarray) -> pa.Table:
        """The records of `rows`, lines that all fully match `shape`."""
        piece = self.first[rows].astype(np.int64)
        line_start = self.starts[piece] + 1  # after `[`
        offsets, stamps = _cut(self.data, line_start, line_start + shape.stamp_len)
        stamps.reshape(len(rows), shape.stamp_len)[:, 10] = ord("T")
        tags_end = self.starts[piece + 1] - shape.head  # the first piece ends at the first `: `
        columns: dict[str, pa.Array] = {
            "kind": pa.repeat(shape.kind, len(rows)),
            "line": pa.Array.from_buffers(pa.int64(), len(rows), [None, pa.py_buffer(line_numbers)]),
            "ts": _strings(offsets, stamps),
            "tags": _tags(_strings(*_cut(self.data, line_start + shape.stamp_len, tags_end))),
        }
        last = len(shape.names) - 1
        for index, (name, kind) in enumerate(zip(shape.names, shape.types, strict=True)):
            starts = self.starts[piece + index + 1]
            ends = self.starts[piece + index + 2]
            ends = ends - shape.gaps[index] if index < last else self._trim(starts, ends)
            if kind == "bool":
                columns[name] = _booleans(self.data, starts)
            else:
                columns[name] = _numbers(self.data, starts, ends, kind)
        _pool_totals(columns)
        return pa.Table.from_pydict(columns)

    def _trim(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Drop the separators that may follow a line's last value (a value never ends in one)."""
        ends = ends.copy()
        while True:
            more = (ends > starts) & np.isin(self.data[np.maximum(ends - 1, 0)], _TRAILING)
            if not more.any():
                return ends
            ends -= more


class ColumnarSglang:
    """Reads blocks of one SGLang stream; `parser` is that stream's parser and sees every other line."""

    def __init__(self, parser: SglangParser, pool: Executor | None = None) -> None:
        self.parser = parser
        self.pool = pool  # the shapes' regexes run side by side when given (Arrow releases the GIL)

    def block(self, first_line_no: int, lines: pa.Array) -> tuple[list[pa.Table], list[Record]]:
        """(tables of fast-path records, the parser's records) for lines numbered from first_line_no."""
        if self.parser._block is not None:
            return [], self._python(first_line_no, lines.to_pylist())
        pieces: list[Piece] = []
        taken = self._known(lines, first_line_no, pieces)
        open_rows = np.flatnonzero(~taken)
        open_lines = lines.take(pa.Array.from_buffers(pa.int64(), len(open_rows), [None, pa.py_buffer(open_rows)]))
        batch = _has(open_lines, " batch")  # in both markers: one scan finds learning candidates
        learnt = self._learn(open_lines, open_rows, batch, first_line_no, pieces)
        if len(learnt):
            keep = ~np.isin(np.arange(len(open_rows)), learnt)
            open_rows, open_lines, batch = open_rows[keep], open_lines.filter(pa.array(keep)), batch[keep]
        access = _access(open_lines, batch)
        access_rows = open_rows[access]
        records, cut = self._rest(first_line_no, lines, open_rows[~access].tolist())
        if cut is not None:
            pieces = [(rows[rows < cut], table.filter(pa.array(rows < cut))) for rows, table in pieces]
            access_rows = access_rows[access_rows < cut]
        self._count(sum(len(table) for _, table in pieces), len(access_rows))
        return [table for _, table in pieces if len(table)], records

    def _known(self, lines: pa.Array, first: int, pieces: list[Piece]) -> np.ndarray:
        """Rows that match a shape already known, their records added to `pieces`."""
        shapes = [shape for kind, _ in _MARKERS for shape in self.parser._shapes.shapes[kind]]
        taken = np.zeros(len(lines), bool)
        if not shapes:
            return taken

        same = [lines] * len(shapes)
        masks = list(self.pool.map(_matches, shapes, same) if self.pool else map(_matches, shapes, same))
        split: _Split | None = None
        for shape, mask in zip(shapes, masks, strict=True):
            rows = np.flatnonzero(mask & ~taken)
            if len(rows):
                split = split or _Split(lines)
                taken[rows] = True
                pieces.append((rows, split.table(shape, rows, rows + first)))
        return taken

    def _learn(
        self, lines: pa.Array, rows: np.ndarray, batch: np.ndarray, first: int, pieces: list[Piece]
    ) -> np.ndarray:
        """Learn shapes from batch lines that matched none and take the lines they match: their indices.

        `batch`: which of `lines` hold ` batch`.
        """
        taken = np.zeros(len(lines), bool)
        with_batch = np.flatnonzero(batch)
        if not len(with_batch):
            return with_batch
        shapes = self.parser._shapes
        split: _Split | None = None
        for kind, marker in _MARKERS:
            candidates = np.zeros(len(lines), bool)
            candidates[with_batch] = _has(lines.take(with_batch), marker)
            for _ in range(_NEW_SHAPES_PER_BLOCK):
                left = np.flatnonzero(candidates & ~taken)
                if not len(left):
                    break
                shape = shapes.learn(kind, _strip_cr(lines[int(left[0])].as_py()))
                if shape is None:
                    break  # an unlearnable line: the parser reads the rest of them
                matched = np.flatnonzero(_matches(shape, lines) & ~taken)
                taken[matched] = True
                split = split or _Split(lines)
                pieces.append((rows[matched], split.table(shape, matched, rows[matched] + first)))
        return np.flatnonzero(taken)

    def _count(self, fast_records: int, access_lines: int) -> None:
        health = self.parser.health
        health.lines += fast_records + access_lines
        health.records += fast_records
        health.access += access_lines

    def _rest(self, first: int, lines: pa.Array, rows: list[int]) -> tuple[list[Record], int | None]:
        """Feed the parser its lines; the row from which it took over the whole block, if it did."""
        records: list[Record] = []
        parser = self.parser
        texts = lines.take(pa.array(rows, pa.int64())).to_pylist() if rows else []
        for row, text in zip(rows, texts, strict=True):
            records += parser.feed(first + row, _strip_cr(text))
            if parser._block is not None:
                records += self._python(first + row + 1, lines.slice(row + 1).to_pylist())
                return records, row + 1
        return records, None

    def _python(self, first: int, texts: list[str]) -> list[Record]:
        records: list[Record] = []
        for offset, text in enumerate(texts):
            records += self.parser.feed(first + offset, _strip_cr(text))
        return records


def _pool_totals(columns: dict[str, pa.Array]) -> None:
    """parsers.pools's `token_usage` and `token` of a hybrid model's lines, as columns."""
    for total, parts in (("token_usage", USAGE_PARTS), ("token", TOKEN_PARTS)):
        present = [columns[name] for name in parts if name in columns and columns[name].type != pa.bool_()]
        if total in columns or not present or (total == "token" and "full_token" not in columns):
            continue
        if len({array.type for array in present}) > 1:  # a value logged as 1 on one line, 0.5 on another
            present = [array.cast(pa.float64()) for array in present]
        columns[total] = pc.max_element_wise(*present) if len(present) > 1 else present[0]


def _matches(shape: Shape, lines: pa.Array) -> np.ndarray:
    """Which lines fully match `shape`: RE2's DFA, no captures."""
    mask: np.ndarray = pc.match_substring_regex(lines, shape.pattern).to_numpy(zero_copy_only=False)
    return mask


def _has(lines: pa.Array, needle: str) -> np.ndarray:
    found: np.ndarray = pc.match_substring(lines, needle).to_numpy(zero_copy_only=False)
    return found


def _access(lines: pa.Array, batch: np.ndarray) -> np.ndarray:
    """Which lines the parser would count as access lines: `is_access_line` and no ` batch` to try first."""
    found = ~batch
    for needle in (' - "', " HTTP/"):
        rows = np.flatnonzero(found)
        if not len(rows):
            break
        found[rows] = _has(lines.take(rows), needle)
    return found


def _strip_cr(text: str) -> str:
    return text[:-1] if text.endswith("\r") else text
