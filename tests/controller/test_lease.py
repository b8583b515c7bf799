"""The host lease that makes two kvwatch processes exclude each other, on literal directories."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from kvwatch.app.controller.remote_helper import op_lease, op_release


def test_a_lease_being_created_is_held_not_stale(tmp_path: Path) -> None:
    # The winner has made the directory but not yet written owner.json.
    (tmp_path / "lease").mkdir()
    assert op_lease(str(tmp_path), "late", "60")["ok"] is False
    assert (tmp_path / "lease").is_dir()


def test_an_expired_lease_is_taken_over_and_released(tmp_path: Path) -> None:
    (tmp_path / "lease").mkdir()
    owner = {"op_id": "old", "at": time.time() - 3600, "lease_s": 60.0, "pid": 1}
    (tmp_path / "lease" / "owner.json").write_text(json.dumps(owner))
    taken = op_lease(str(tmp_path), "new", "60")
    assert taken["ok"] is True
    assert taken["holder"]["op_id"] == "new"
    assert op_lease(str(tmp_path), "other", "60")["ok"] is False
    assert op_release(str(tmp_path), "new") == {"ok": True}
    assert not os.path.exists(tmp_path / "lease")


def test_an_old_empty_lease_directory_is_stale(tmp_path: Path) -> None:
    (tmp_path / "lease").mkdir()
    old = time.time() - 3600
    os.utime(tmp_path / "lease", (old, old))
    assert op_lease(str(tmp_path), "new", "60")["ok"] is True
