"""Arrow columns cut out of a block's bytes by position, for the columnar path (parsers/columnar.py)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kvwatch.parsers.header import parse_tags

_ARROW_TYPES = {"int": pa.int64(), "float": pa.float64()}


def offsets(array: pa.Array) -> np.ndarray:
    """The offsets of a string or list array (StringArray has no `.offsets` of its own)."""
    buffer = array.buffers()[1]
    if buffer is None:
        return np.zeros(len(array) + 1, np.int32)
    return np.frombuffer(buffer, np.int32)[array.offset : array.offset + len(array) + 1]


def cut(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The byte ranges [starts, ends) of `data` copied one after the other: (offsets, bytes)."""
    lengths = ends - starts
    bounds = np.zeros(len(starts) + 1, np.int64)
    np.cumsum(lengths, out=bounds[1:])
    width = int(lengths[0]) if len(lengths) else 0
    if width > 0 and bounds[-1] == width * len(starts) and (lengths == width).all():
        # One width (timestamps; rank tags, mostly): rows of a sliding window, no index per byte.
        return bounds, np.lib.stride_tricks.sliding_window_view(data, width)[starts].reshape(-1)
    index = np.repeat(starts - bounds[:-1], lengths) + np.arange(bounds[-1])
    return bounds, data[index]


def strings(bounds: np.ndarray, data: np.ndarray, kind: pa.DataType | None = None) -> pa.Array:
    buffers = [None, pa.py_buffer(bounds.astype(np.int32)), pa.py_buffer(data)]
    return pa.Array.from_buffers(kind or pa.string(), len(bounds) - 1, buffers)


def spans(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, kind: pa.DataType | None = None) -> pa.Array:
    """The byte ranges [starts, ends) of `data` as 2n strings, no copy: items 0, 2, 4, ... are the
    ranges, the odd items (the text between two ranges) null, so no kernel reads them."""
    count = len(starts)
    bounds = np.empty(2 * count + 1, np.int32)
    bounds[0:-1:2], bounds[1::2], bounds[-1] = starts, ends, ends[-1] if count else 0
    valid = np.full((2 * count + 7) // 8, 0x55, np.uint8)  # bits 0, 2, 4, ...: the ranges
    buffers = [pa.py_buffer(valid), pa.py_buffer(bounds), pa.py_buffer(data)]
    return pa.Array.from_buffers(kind or pa.string(), 2 * count, buffers)


def evens(array: pa.Array) -> pa.Array:
    """Items 0, 2, 4, ... of a fixed-width array computed over `spans`, as an array without nulls."""
    count = len(array) // 2
    width = array.type.byte_width
    values = np.frombuffer(array.buffers()[1], np.uint8).reshape(-1, width)[0 : 2 * count : 2]
    return pa.Array.from_buffers(array.type, count, [None, pa.py_buffer(np.ascontiguousarray(values))])


def numbers(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, kind: str) -> pa.Array:
    """The numbers written at the byte ranges [starts, ends) of `data`, parsed by Arrow's cast."""
    if len(starts) == 0:
        return pa.array([], _ARROW_TYPES[kind])
    return evens(spans(data, starts, ends).cast(_ARROW_TYPES[kind]))


def booleans(data: np.ndarray, starts: np.ndarray) -> pa.Array:
    """`True`/`False` at `starts` (a matching line has one of the two there)."""
    bits = np.packbits(data[starts] == ord("T"), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(starts), [None, pa.py_buffer(bits)])


def tags(tag_texts: pa.Array) -> pa.Array:
    uniques = pc.unique(tag_texts)
    dicts = [parse_tags(text) if text else {} for text in uniques.to_pylist()]
    if not any(dicts):
        return pa.nulls(len(tag_texts))  # untagged log: an empty struct cannot go to Parquet
    return pa.array(dicts).take(pc.index_in(tag_texts, uniques))
