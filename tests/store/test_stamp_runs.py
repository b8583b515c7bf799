"""Stream positions count stamps as the page holds them: whole milliseconds."""

from kvwatch.app.pipeline.sink import StampRuns, page_stamp

T0 = 1_796_547_944.370


def test_stamps_within_one_millisecond_are_one_stamp() -> None:
    # output lines stored 0.3 ms apart: the page's Date draws them at one x, so their positions
    # must count on; counting each as a new stamp made an open tab drop the second and third
    runs = StampRuns()
    assert runs.advance("completions", [[T0, 25.0]]) == 0
    assert runs.advance("completions", [[T0 + 0.0003, 26.0]]) == 1
    assert runs.advance("completions", [[T0 + 0.0004, 27.0], [T0 + 0.004, 32.0]]) == 2
    assert runs.advance("completions", [[T0 + 0.004, 33.0]]) == 1


def test_page_stamp_truncates_like_a_javascript_date() -> None:
    # new Date(1796547944370.9).getTime() is 1796547944370
    assert page_stamp(1_796_547_944.3709) == 1_796_547_944_370
    assert page_stamp(1_796_547_944.0) == 1_796_547_944_000
