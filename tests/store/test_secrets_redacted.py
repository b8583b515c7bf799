"""A server's own secrets (its `api_key` in a logged server_args) never rest in the store: redacted on the
way in, and redacted in place in a store written before (schema version 6)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from kvwatch.app.store import Store, open_store
from kvwatch.app.store.base import Batch, EventRow
from kvwatch.app.store.schema import LATEST_VERSION

SECRET = "sk-live-0123456789abcdef"
ARGS = {"model_path": "/m", "api_key": SECRET, "admin_api_key": None, "hf_token": "hf_" + SECRET,
        "launch": f"python -m sglang.launch_server --api-key {SECRET} --tp 8", "max_total_tokens": 5}


def _raw_event_batch() -> Batch:
    # As a parser of an older kvwatch (or any other writer) hands it over: the secret still in it.
    return Batch("gpu1", "server_log", "/l", events=[EventRow("server_args", 10.0, 1, {"args": dict(ARGS)})])


def _stored_args(store: Store) -> dict[str, object]:
    (event,) = store.events("gpu1", kinds=("server_args",))
    return dict(event["args"])


def test_a_committed_event_and_document_keep_no_secret(store: Store, store_url: str) -> None:
    store.commit(_raw_event_batch())
    store.put_document("restart", "r1", "gpu1", 1.0, {"flags": {"api-key": SECRET, "tp-size": 8}})
    args = _stored_args(store)
    assert args["api_key"] == "<redacted>" and args["hf_token"] == "<redacted>"
    assert args["admin_api_key"] is None and args["max_total_tokens"] == 5
    assert args["launch"] == "python -m sglang.launch_server --api-key <redacted> --tp 8"
    assert SECRET not in json.dumps(store.documents("restart"))
    if "://" not in store_url:
        store.close()
        for path in Path(store_url).parent.glob("kvwatch.db*"):
            assert SECRET.encode() not in path.read_bytes(), path


def test_version_6_redacts_what_an_older_store_holds(store_url: str) -> None:
    store = open_store(store_url)
    run = store._run  # type: ignore[attr-defined]
    run("INSERT INTO events (host, source, kind, t, line, data) VALUES (?, ?, ?, ?, ?, ?)",
        ("gpu1", "server_log", "server_args", 10.0, 1, json.dumps({"args": ARGS})))
    run("INSERT INTO documents (kind, key, host, t, data) VALUES (?, ?, ?, ?, ?)",
        ("run", "r1", "gpu1", 1.0, json.dumps({"flags": {"api_key": SECRET}})))
    run("UPDATE schema_version SET version = 5")
    store.close()
    reopened = open_store(store_url)
    try:
        assert reopened.schema_version() == LATEST_VERSION == 6  # type: ignore[attr-defined]
        assert _stored_args(reopened)["api_key"] == "<redacted>"
        assert reopened.documents("run")[0]["data"]["flags"]["api_key"] == "<redacted>"
    finally:
        reopened.close()


def test_a_new_sqlite_store_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        store = open_store(str(tmp_path / "new.db"))
        store.commit(_raw_event_batch())
    finally:
        os.umask(old)
    try:
        for path in tmp_path.glob("new.db*"):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    finally:
        store.close()
