"""Secrets already stored, redacted in place: the pass of schema version 6.

Rows are rewritten only where redaction changes them; a row whose data is not JSON is left alone.
New rows are redacted on the way in (`SqlStore.commit`, `put_document`), so this runs once per store.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from kvwatch.parsers.secrets import redact

Run = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]

# A cheap prefilter: a row can hold a secret only if one of these stands in its JSON text.
_HINTS = ("key", "token", "pass", "secret", "credential")
_PREFILTER = " OR ".join("lower(data) LIKE ?" for _ in _HINTS)
_PATTERNS = tuple(f"%{hint}%" for hint in _HINTS)


def _redacted_json(text: str) -> str | None:
    """The row's data with its secrets redacted, or None when nothing changes."""
    if not any(hint in text.lower() for hint in _HINTS):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    cleaned = redact(data)
    return None if cleaned == data else json.dumps(cleaned)


def redact_stored(run: Run) -> int:
    """Rewrite every stored event and document that holds a secret; the number of rows changed."""
    changed = 0
    for event_id, text in run(f"SELECT id, data FROM events WHERE {_PREFILTER}", _PATTERNS):
        new = _redacted_json(text)
        if new is not None:
            run("UPDATE events SET data = ? WHERE id = ?", (new, event_id))
            changed += 1
    for kind, key, text in run(f"SELECT kind, key, data FROM documents WHERE {_PREFILTER}", _PATTERNS):
        new = _redacted_json(text)
        if new is not None:
            run("UPDATE documents SET data = ? WHERE kind = ? AND key = ?", (new, kind, key))
            changed += 1
    return changed
