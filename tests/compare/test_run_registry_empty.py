"""A host without any run yet: the registry answers an empty list (GET /api/runs used to answer 500)."""

from __future__ import annotations

from pathlib import Path

from kvwatch.app.runs.registry import list_runs, merge_controller_runs
from kvwatch.app.store import open_store


def test_no_runs_is_an_empty_list(tmp_path: Path) -> None:
    assert merge_controller_runs([], []) == []
    store = open_store(str(tmp_path / "kvwatch.db"))
    try:
        assert list_runs(store, "gpu1") == []
    finally:
        store.close()
