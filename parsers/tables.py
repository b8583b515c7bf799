"""Records as Arrow tables, for CSV and Parquet output (pure: no I/O).

Columns come in record order, `kind, line, ts, tags` first. A column takes the type of its values;
mixed int and float become float, other mixes text; flat dicts (`tags`, `labels`) become structs
(all empty: nulls, as Parquet has no empty struct), nested ones (`args`) JSON text. Tables of
different batches are brought to one schema with `unified_schema` and `conform`; `csv_ready`
flattens structs to `tags.TP`-style columns and lists to JSON text for CSV.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from kvwatch.parsers.base import Record

FIRST_COLUMNS = ("kind", "line", "ts", "tags")


def records_table(batch: list[Record]) -> pa.Table:
    """Records -> table; each column typed by its values (mixed -> float or text)."""
    names = dict.fromkeys(FIRST_COLUMNS)
    for shape in dict.fromkeys(tuple(record) for record in batch):
        names.update(dict.fromkeys(shape))
    columns = {}
    for name in names:
        values = [record.get(name) for record in batch]
        if any(value is not None for value in values):
            columns[name] = _column(values)
    return pa.Table.from_pydict(columns)


_JSON_CACHE: dict[Any, str] = {}


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        key = tuple(value.items()) if isinstance(value, dict) and len(value) < 8 else None
        try:
            cached = _JSON_CACHE.get(key) if key is not None else None
        except TypeError:  # an unhashable value inside
            key = cached = None
        if cached is None:
            cached = json.dumps(value, ensure_ascii=False)
            if key is not None and len(_JSON_CACHE) < 4096:
                _JSON_CACHE[key] = cached
        return cached
    return str(value)


def _flat(value: Any) -> bool:
    return isinstance(value, dict) and not any(isinstance(item, dict | list) for item in value.values())


def _column(values: list[Any]) -> pa.Array:
    kinds = {type(value) for value in values if value is not None}
    if kinds == {dict} and all(_flat(value) for value in values if value is not None):
        try:
            array = pa.array(values)
        except (pa.ArrowException, OverflowError, TypeError, ValueError):
            array = None
        if array is not None:  # `tags`: a struct; all empty -> nulls (Parquet has no empty struct)
            return pa.nulls(len(values)) if array.type.num_fields == 0 else array
    if kinds & {dict, list}:
        return pa.array([_text(value) for value in values], pa.string())
    if kinds == {int, float}:
        return pa.array([None if value is None else float(value) for value in values], pa.float64())
    try:
        return pa.array(values)
    except (pa.ArrowException, OverflowError, TypeError, ValueError):
        return pa.array([_text(value) for value in values], pa.string())


def unified_schema(schemas: list[pa.Schema]) -> pa.Schema:
    """One schema for all parts: Arrow's permissive promotion, else per column float or text."""
    try:
        return pa.unify_schemas(schemas, promote_options="permissive")
    except (pa.ArrowException, TypeError, ValueError):
        pass
    types: dict[str, set[pa.DataType]] = {}
    for schema in schemas:
        for field in schema:
            types.setdefault(field.name, set()).add(field.type)
    fields = []
    for name, found in types.items():
        found.discard(pa.null())
        if len(found) == 1:
            fields.append(pa.field(name, found.pop()))
        elif found and all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in found):
            fields.append(pa.field(name, pa.float64()))
        else:
            fields.append(pa.field(name, pa.string() if found else pa.null()))
    return pa.schema(fields)


def _cast(column: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray | pa.Array:
    try:
        return column.cast(target)
    except (pa.ArrowException, TypeError, ValueError):
        return pa.array([_text(value) for value in column.to_pylist()], target)


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    columns = []
    for field in schema:
        if field.name in table.column_names:
            columns.append(_cast(table[field.name], field.type))
        else:
            columns.append(pa.nulls(len(table), field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def csv_ready(table: pa.Table) -> pa.Table:
    """CSV holds scalars only: struct columns become `tags.TP`-style columns, lists JSON text."""
    while any(pa.types.is_struct(field.type) for field in table.schema):
        table = table.flatten()
    for index, field in enumerate(table.schema):
        if pa.types.is_list(field.type) or pa.types.is_large_list(field.type):
            texts = pa.array([_text(value) for value in table[field.name].to_pylist()], pa.string())
            table = table.set_column(index, field.name, texts)
    return table
