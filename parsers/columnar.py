"""Columnar fast path for SGLang logs read whole (`kvwatch parse` to CSV or Parquet).

A block of lines (an Arrow string array) is read in three ways at once: the batch lines that match
a shape the stream's SglangParser has learnt (parsers.shapes) are extracted with one RE2 pass per
shape and cast column-wise; access lines are counted; every other line goes through the parser
itself, in order. The records are the ones the parser would give for the same lines (tests compare
them), and the parser's health counts them. One exception keeps this exact: while the parser holds
a traceback open, the rest of the block goes through the parser line by line.
"""

from __future__ import annotations

from concurrent.futures import Executor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from parsers.base import Record
from parsers.header import parse_tags
from parsers.sglang import SglangParser
from parsers.shapes import Shape

_MARKERS = (("decode", "Decode batch"), ("prefill", "Prefill batch"))
_ARROW_TYPES = {"int": pa.int64(), "float": pa.float64()}
_NEW_SHAPES_PER_BLOCK = 4
Piece = tuple[pa.Array, pa.Table]  # (row positions in the block, their records)


def _tags(tag_texts: pa.Array) -> pa.Array:
    uniques = pc.unique(tag_texts)
    dicts = [parse_tags(text) if text else {} for text in uniques.to_pylist()]
    if not any(dicts):
        return pa.nulls(len(tag_texts))  # untagged log: an empty struct cannot go to Parquet
    return pa.array(dicts).take(pc.index_in(tag_texts, uniques))


def _shape_table(shape: Shape, groups: pa.StructArray, line_numbers: pa.Array) -> pa.Table:
    header = groups.field("hdr")
    columns: dict[str, pa.Array] = {
        "kind": pa.repeat(shape.kind, len(groups)),
        "line": line_numbers,
        "ts": pc.utf8_replace_slice(pc.utf8_slice_codeunits(header, 0, shape.stamp_len), 10, 11, "T"),
        "tags": _tags(pc.utf8_slice_codeunits(header, shape.stamp_len)),
    }
    for index, (name, kind) in enumerate(zip(shape.names, shape.types, strict=True)):
        raw = groups.field(f"v{index}")
        columns[name] = pc.equal(raw, "True") if kind == "bool" else raw.cast(_ARROW_TYPES[kind])
    return pa.Table.from_pydict(columns)


def _access_rows(lines: pa.Array, rows: pa.Array) -> pa.Array:
    """The rows the parser would count as access lines: `is_access_line` and no ` batch` to try first."""
    for needle, wanted in ((' - "', True), (" HTTP/", True), (" batch", False)):
        if len(rows) == 0:
            break
        found = pc.match_substring(lines.take(rows), needle)
        rows = rows.filter(found if wanted else pc.invert(found))
    return rows


def _strip_cr(text: str) -> str:
    return text[:-1] if text.endswith("\r") else text


class ColumnarSglang:
    """Reads blocks of one SGLang stream; `parser` is that stream's parser and sees every other line."""

    def __init__(self, parser: SglangParser, pool: Executor | None = None) -> None:
        self.parser = parser
        self.pool = pool  # decode and prefill lines are extracted side by side when given

    def _kind(self, kind: str, marker: str, lines: pa.Array, first: int) -> list[Piece]:
        """One kind's pieces. Touches only that kind's shapes, so two kinds may run in two threads."""
        pieces: list[Piece] = []
        candidates = pc.indices_nonzero(pc.match_substring(lines, marker)).cast(pa.int64())
        if len(candidates):
            self._extract(kind, lines, candidates, first, pieces)
        return pieces

    def block(self, first_line_no: int, lines: pa.Array) -> tuple[list[pa.Table], list[Record]]:
        """(tables of fast-path records, the parser's records) for lines numbered from first_line_no."""
        if self.parser._block is not None:
            return [], self._python(first_line_no, lines.to_pylist())
        if self.pool is None:
            found = [self._kind(kind, marker, lines, first_line_no) for kind, marker in _MARKERS]
        else:
            futures = [self.pool.submit(self._kind, kind, marker, lines, first_line_no) for kind, marker in _MARKERS]
            found = [future.result() for future in futures]
        pieces = [piece for kind_pieces in found for piece in kind_pieces]
        positions = pa.array(np.arange(len(lines), dtype=np.int64))
        taken_rows = [rows for rows, _ in pieces] or [pa.array([], pa.int64())]
        taken = pc.is_in(positions, pa.concat_arrays(taken_rows))
        open_rows = pc.indices_nonzero(pc.invert(taken)).cast(pa.int64())
        access_rows = _access_rows(lines, open_rows)
        rest = open_rows.filter(pc.invert(pc.is_in(open_rows, access_rows))).to_pylist()
        records, cut = self._rest(first_line_no, lines, rest)
        if cut is not None:
            pieces = [(rows, table.filter(pc.less(rows, cut))) for rows, table in pieces]
            access_rows = access_rows.filter(pc.less(access_rows, cut))
        self._count(sum(len(table) for _, table in pieces), len(access_rows))
        return [table for _, table in pieces if len(table)], records

    def _count(self, fast_records: int, access_lines: int) -> None:
        health = self.parser.health
        health.lines += fast_records + access_lines
        health.records += fast_records
        health.access += access_lines

    def _extract(self, kind: str, lines: pa.Array, rows: pa.Array, first: int, pieces: list[Piece]) -> None:
        """Take the candidate rows that match a shape, learning new shapes from rows that match none."""
        shapes = self.parser._shapes
        learnt = 0
        while len(rows):
            subset = lines.take(rows)
            for shape in shapes.shapes[kind]:
                groups = pc.extract_regex(subset, shape.pattern)
                valid = groups.is_valid()
                if pc.any(valid).as_py():
                    matched = rows.filter(valid)
                    numbers = pc.add(matched, first)
                    pieces.append((matched, _shape_table(shape, groups.filter(valid), numbers)))
                    rows = rows.filter(pc.invert(valid))
                    break
            else:
                learnable = learnt < _NEW_SHAPES_PER_BLOCK
                if not learnable or shapes.learn(kind, _strip_cr(subset[0].as_py())) is None:
                    return  # an unlearnable line: the parser reads the rest of them
                learnt += 1

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
