"""Columnar fast path for SGLang logs read whole (`kvwatch parse` to CSV or Parquet).

A block of lines (an Arrow string array) is read in three ways at once: the batch lines that fully
match a shape the stream's SglangParser has learnt (parsers.shapes) become columns; access lines are
counted; every other line goes through the parser itself, in order. The records are the ones the
parser would give for the same lines (tests compare them), and the parser's health counts them. One
exception keeps this exact: while the parser holds a traceback open, the rest of the block goes
through the parser line by line.

Why no regex captures: with more than four groups RE2 cannot use its one-pass engine and falls back
to a backtracker, about 2.4 times the cost of a plain match. The values are cut out of the lines by
position instead, and which lines match a shape is checked on their bytes (parsers/columnar_split.py).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kvwatch.parsers.base import Record
from kvwatch.parsers.columnar_split import Scratch, Split
from kvwatch.parsers.sglang import SglangParser

_MARKERS = (("decode", "Decode batch"), ("prefill", "Prefill batch"))
_NEW_SHAPES_PER_BLOCK = 4
Piece = tuple[np.ndarray, pa.Table]  # (row positions in the block, their records)


class ColumnarSglang:
    """Reads blocks of one SGLang stream; `parser` is that stream's parser and sees every other line."""

    def __init__(self, parser: SglangParser) -> None:
        self.parser = parser
        self.scratch = Scratch()  # for the known shapes' Split: one block's tables are built before the next

    def block(self, first_line_no: int, lines: pa.Array) -> tuple[list[pa.Table], list[Record]]:
        """(tables of fast-path records, the parser's records) for lines numbered from first_line_no."""
        if self.parser._block is not None:
            return [], self._python(first_line_no, lines.to_pylist())
        pieces: list[Piece] = []
        taken = self._known(lines, first_line_no, pieces)
        open_rows = np.flatnonzero(~taken)
        open_lines = lines.filter(pa.array(~taken)) if len(open_rows) < len(lines) else lines
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
        split = Split(lines, self.scratch)
        for shape in shapes:  # in this order: a line that two shapes match is the first one's
            rows, values = split.matching(shape, np.flatnonzero(~taken))
            if len(rows):
                taken[rows] = True
                pieces.append((rows, split.table(shape, rows, values, rows + first)))
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
        split: Split | None = None
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
                split = split or Split(lines)
                matched, values = split.matching(shape, np.flatnonzero(~taken))
                taken[matched] = True
                pieces.append((rows[matched], split.table(shape, matched, values, rows[matched] + first)))
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


def _has(lines: pa.Array, needle: str) -> np.ndarray:
    found: np.ndarray = pc.match_substring(lines, needle).to_numpy(zero_copy_only=False)
    return found


def _access(lines: pa.Array, batch: np.ndarray) -> np.ndarray:
    """Which lines the parser would count as access lines: `is_access_line` and no ` batch` to try first."""
    if not len(lines):
        return np.zeros(0, bool)
    # Each scan over all the lines: cheaper than a `take` of the rows still in question before it.
    found: np.ndarray = ~batch & _has(lines, ' - "') & _has(lines, " HTTP/")
    return found


def _strip_cr(text: str) -> str:
    return text[:-1] if text.endswith("\r") else text
