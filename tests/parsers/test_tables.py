"""Records as Arrow tables: column typing and one schema across batches."""

from __future__ import annotations

import pyarrow as pa

from kvwatch.parsers.tables import conform, csv_ready, records_table, unified_schema


def test_columns_are_typed_by_their_values() -> None:
    table = records_table(
        [
            {"kind": "decode", "line": 1, "tags": {"TP": 0}, "a": 1, "b": 1, "c": True},
            {"kind": "event", "line": 2, "tags": {}, "a": 2.5, "b": "x", "args": {"n": [1, 2]}},
        ]
    )
    assert table.column_names[:3] == ["kind", "line", "tags"]
    assert table.schema.field("a").type == pa.float64()
    assert table.schema.field("b").type == pa.string()
    assert table["tags"].to_pylist() == [{"TP": 0}, {"TP": None}]
    assert table["args"].to_pylist() == [None, '{"n": [1, 2]}']


def test_untagged_records_give_a_null_column() -> None:
    table = records_table([{"kind": "decode", "line": 1, "tags": {}}])
    assert table.schema.field("tags").type == pa.null()


def test_batches_meet_in_one_schema() -> None:
    first = records_table([{"kind": "decode", "line": 1, "tags": {"TP": 0}, "x": 1}])
    second = records_table([{"kind": "decode", "line": 2, "tags": {"DP": 1, "TP": 1}, "x": 0.5, "y": "s"}])
    schema = unified_schema([first.schema, second.schema])
    assert schema.field("x").type == pa.float64()
    rows = conform(first, schema).to_pylist() + conform(second, schema).to_pylist()
    assert rows[0] == {"kind": "decode", "line": 1, "tags": {"TP": 0, "DP": None}, "x": 1.0, "y": None}
    assert csv_ready(conform(second, schema)).column_names == ["kind", "line", "tags.TP", "tags.DP", "x", "y"]


def test_clashing_types_fall_back_to_text() -> None:
    first = records_table([{"kind": "a", "line": 1, "v": 1}])
    second = records_table([{"kind": "a", "line": 2, "v": "text"}])
    schema = unified_schema([first.schema, second.schema])
    assert schema.field("v").type == pa.string()
    assert conform(first, schema)["v"].to_pylist() == ["1"]
