"""StampRuns counts a backlog batch's points in arrays and a live batch's one by one: the same answers
either way, for any run of stamps (equal stamps are common: SGLang logs whole seconds)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kvwatch.app.pipeline.sink import SHORT_RUN, StampRuns

seconds = st.lists(st.sampled_from([1771930154.0, 1771930154.0004, 1771930155.0, 1771930155.9999, 1771930156.5]),
                   min_size=0, max_size=3 * SHORT_RUN)


@settings(max_examples=300, deadline=None)
@given(batches=st.lists(seconds, max_size=5))
def test_counting_in_arrays_answers_as_counting_one_by_one(batches: list[list[float]]) -> None:
    one_by_one, in_arrays = StampRuns(), StampRuns()
    for times in batches:
        expected = [one_by_one.advance("m", [t]) for t in times]  # each answer: before that point
        got = in_arrays.advance("m", np.array(times))
        assert got == (expected[0] if expected else 0)
    assert in_arrays._last == one_by_one._last


def test_a_long_batch_continuing_a_stamp_counts_on_from_it() -> None:
    runs = StampRuns()
    assert runs.advance("m", [10.0, 10.0]) == 0
    assert runs.advance("m", np.full(SHORT_RUN + 1, 10.0)) == 2
    assert runs.advance("m", [10.0]) == SHORT_RUN + 3
    assert runs.advance("m", np.r_[np.full(SHORT_RUN, 10.0), 11.0, 11.0]) == SHORT_RUN + 4
    assert runs.advance("m", [11.0]) == 2
