"""Rollup buckets merged from rows and chunks (app/store/rollup_chunks.py) on literal tables: the
result equals what upserting every sample into one row per bucket gives."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kvwatch.app.store.base import Sample
from kvwatch.app.store.rollup import bucket_rows
from kvwatch.app.store.rollup_chunks import bucket_table, merge


def upserted(samples: list[tuple[float, float]], width: int) -> np.ndarray:
    """What the row path stores for these samples, in arrival order (rollup.bucket_rows)."""
    rows = bucket_rows("h", [Sample("m", "", t, v) for t, v in samples])
    return np.asarray(sorted(r[4:] for r in rows if r[3] == width), dtype=np.float64)


def test_a_bucket_split_over_parts_folds_as_the_upsert_would() -> None:
    first = [(100.0, 5.0), (101.0, 2.0), (102.0, 9.0), (109.0, 2.0)]  # bucket 100 ends with a tied minimum
    second = [(105.0, 2.0), (106.0, 9.0), (108.0, 1.5), (115.0, 3.0)]  # back in bucket 100, then 110
    t1, v1 = np.array(first).T
    t2, v2 = np.array(second).T
    merged = merge([bucket_table(t1, v1, 10), bucket_table(t2, v2, 10)])
    np.testing.assert_array_equal(merged, upserted(first + second, 10))
    assert merged[0].tolist() == [100.0, 7.0, 30.5, 108.0, 1.5, 102.0, 9.0, 109.0, 2.0]


def test_ties_keep_the_earlier_sample_whichever_part_comes_first() -> None:
    early = np.array([[200.0, 1.0, 4.0, 201.0, 4.0, 201.0, 4.0, 201.0, 4.0]])
    late = np.array([[200.0, 1.0, 4.0, 207.0, 4.0, 207.0, 4.0, 207.0, 4.0]])
    for parts in ([early, late], [late, early]):
        row = merge(parts)[0]
        assert (row[3], row[5], row[7]) == (201.0, 201.0, 207.0)  # min and max: earliest; last: newest
        assert (row[1], row[2]) == (2.0, 8.0)


def test_buckets_without_overlap_pass_through_in_order() -> None:
    t = np.arange(0.0, 100.0, 3.0)
    v = np.sin(t)
    table = bucket_table(t, v, 10)
    np.testing.assert_array_equal(merge([table[5:], table[:5]]), table)
    np.testing.assert_array_equal(table, upserted(list(zip(t, v, strict=True)), 10))


samples = st.lists(st.tuples(st.sampled_from([100.0, 100.5, 101.0, 109.0, 110.0, 130.0, 600.0, 1201.0]),
                             st.sampled_from([1.0, 2.0, 2.0, 9.0])), min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(samples=samples)
def test_samples_in_time_order_with_equal_stamps_fold_as_the_upsert_would(samples: list[tuple[float, float]]) -> None:
    ordered = sorted(samples, key=lambda s: s[0])  # stable: equal stamps keep their arrival order
    t, v = np.array(ordered).T
    for width in (10, 60, 600):
        np.testing.assert_array_equal(bucket_table(t, v, width), upserted(ordered, width))


@settings(max_examples=300, deadline=None)
@given(samples=samples)
def test_samples_out_of_time_order_fold_as_the_same_samples_in_order(samples: list[tuple[float, float]]) -> None:
    t, v = np.array(samples).T
    order = np.argsort(t, kind="stable")
    for width in (10, 60, 600):
        np.testing.assert_array_equal(bucket_table(t, v, width), bucket_table(t[order], v[order], width))
